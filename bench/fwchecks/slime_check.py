"""slime's own start-up path on exported arguments (run in slime's virtual environment, with
slime and the Megatron-LM slime's image pins, patched as the image patches it, on the path).

train.py and train_async.py both start with slime.utils.arguments.parse_args: SGLang's
server arguments, then Megatron-LM's parser with slime's arguments, the HF config cross-check
(_hf_validate_args against the checkpoint's config.json), slime's validation, Megatron's
validate_args (through slime's wrapper) and SGLang's. What follows is
create_placement_groups, which takes the GPUs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import run_cases, run_check, stub_modules

# sglang's multimodal helpers import torchvision at module level; PyPI's torchvision does not
# import beside the CPU build of torch this benchmark installs
STUBS = ("torchvision",)


def prepare() -> None:
    stub_modules(STUBS)
    import slime.backends.megatron_utils.arguments
    import slime.utils.arguments  # noqa: F401


def check(case: dict[str, Any]) -> list[dict[str, Any]]:
    os.chdir(case["cwd"])
    from slime.utils.arguments import parse_args

    sys.argv = [case["entry"], *case["argv"]]
    name = "parse_args (SGLang, Megatron and slime parsers; HF, slime, Megatron, SGLang checks)"
    returned = "parse_args returned; train() goes on to create_placement_groups (GPUs)"
    return [run_check(name, case["roots"], parse_args, returned)]


if __name__ == "__main__":
    run_cases(check, prepare)
