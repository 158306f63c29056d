"""rlmguide: a cited knowledge base and planner for RL post-training of LLMs.

The Python API lives in `rlmguide.api`: `Scenario`, `recommend`, `estimate`, `export`,
`review`, `connect` and the errors `BadInput` and `RequestFailed`. All but `export` and
`review` are importable from here too; those two names belong to the subpackages
`rlmguide.export` and `rlmguide.review`, so a function of that name here would be replaced by
the module as soon as either is imported. The API is loaded on first use, so the command
line's quick paths (`rlmguide sql`) do not pay for it.
"""

from typing import Any

__version__ = "0.1.0"

API = ("BadInput", "RequestFailed", "Scenario", "connect", "estimate", "recommend")
__all__ = [*API, "__version__"]


def __getattr__(name: str) -> Any:
    if name in API:
        from rlmguide import api

        return getattr(api, name)
    raise AttributeError(f"module 'rlmguide' has no attribute {name!r}")
