"""rlmguide: the application layer (command line) over the kb, rules and cost packages."""

__version__ = "0.1.0"
