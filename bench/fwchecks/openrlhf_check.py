"""OpenRLHF's own start-up path on exported arguments (run in OpenRLHF's virtual environment).

openrlhf.cli.train_ppo_ray runs as `python3 -m` runs it: its argparse parser, the checks and
adjustments of its __main__ block, then train(): the DeepSpeed strategy's constructor and the
colocation assertions, up to the first Ray actor that takes GPUs (the vLLM engines, or the
model actor groups where there are none). ray.init is skipped (Ray reports itself
initialised) and a colocated launch's placement group is answered by a stand-in, so the
assertions between it and the engines run.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import ReachedGPU, run_cases, run_check, stub_modules

MODULE = "openrlhf.cli.train_ppo_ray"
# flash-attn has no CPU build; OpenRLHF imports its padding helpers at module level
STUBS = ("flash_attn",)


def prepare() -> None:
    stub_modules(STUBS)
    __import__(MODULE)


class _PlacementGroup:
    def ready(self) -> None:
        return None


def check(case: dict[str, Any]) -> list[dict[str, Any]]:
    os.chdir(case["cwd"])
    import ray
    from openrlhf.trainer import ray as trainer_ray
    from openrlhf.trainer.ray import launcher

    def engines(*_: Any, **__: Any) -> None:
        raise ReachedGPU("create_vllm_engines (vLLM engine actors on GPUs)")

    class Group:
        def __init__(self, *_: Any, **__: Any) -> None:
            raise ReachedGPU("RayActorGroup (model actors on GPUs)")

    ray.is_initialized = lambda: True
    ray.get = lambda refs, *_, **__: refs
    # the module, not ray.util's attribute of the same name (the function)
    sys.modules["ray.util.placement_group"].placement_group = lambda *_, **__: _PlacementGroup()
    trainer_ray.create_vllm_engines = engines
    launcher.RayActorGroup = Group
    sys.argv = [MODULE.replace(".", "/") + ".py", *case["argv"]]
    name = "argparse, __main__ checks, train() to the first GPU actor"
    return [run_check(name, case["roots"], lambda: runpy.run_module(MODULE, run_name="__main__"))]


if __name__ == "__main__":
    run_cases(check, prepare)
