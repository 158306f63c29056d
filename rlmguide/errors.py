"""The errors of the Python API, below it and the command line (which maps them to exit codes)
without importing either's heavy dependencies."""


class RlmguideError(Exception):
    """A request rlmguide refused, in one line; `exit_code` is what the command exits with."""

    exit_code = 1


class BadInput(RlmguideError, ValueError):
    """The input is wrong: an unknown id, an impossible number, a malformed file (exit 2)."""

    exit_code = 2


class RequestFailed(RlmguideError):
    """The request cannot be met: no feasible plan, invalid records (exit 1)."""

    exit_code = 1
