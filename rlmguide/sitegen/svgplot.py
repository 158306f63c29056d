"""Figures saved so the same data gives the same bytes: no timestamp, no random ids.

Matplotlib stamps an SVG with the date (`dc:date`) and derives its clip-path and glyph ids
from a random salt, so every build changed every plot. `svg.hashsalt` fixes the salt and an
empty `Date` drops the stamp.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

SALT = "rlmguide"


def save(fig: Any, target: Path | io.StringIO | io.BytesIO, fmt: str = "svg") -> None:
    """Write `fig` reproducibly to a file or buffer, then close it."""
    import matplotlib
    import matplotlib.pyplot as plt

    # PNG carries no date; its metadata takes no "Date" key, so only SVG gets one.
    metadata = {"Date": None} if fmt == "svg" else None
    with matplotlib.rc_context({"svg.hashsalt": SALT}):
        fig.savefig(target, format=fmt, metadata=metadata)
    plt.close(fig)


def svg(fig: Any) -> str:
    """`fig` as SVG text, reproducibly; the figure is closed."""
    out = io.StringIO()
    save(fig, out)
    return out.getvalue()
