"""Plans as frameworks' launch configurations (`rlmguide export`, `recommend --emit`).

Beside the CLI, over rules and kb: mapping records (kb/records/mappings/) say how each
framework version spells a plan; launch.build applies one to the best plan the framework can
run, render.script writes it; rlmguide.review reads launches back.
"""

from rlmguide.export.launch import Exported, build
from rlmguide.export.mapping import MappingError, NotExpressible
from rlmguide.export.render import script
from rlmguide.export.writer import UnknownVersion, pick_mapping

__all__ = [
    "Exported",
    "MappingError",
    "NotExpressible",
    "UnknownVersion",
    "build",
    "pick_mapping",
    "script",
]
