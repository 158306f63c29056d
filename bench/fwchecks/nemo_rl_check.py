"""NeMo-RL's own start-up path on exported arguments (run in NeMo-RL's virtual environment,
with NeMo-RL's source at the mapping's commit on the path).

examples/run_grpo.py's main runs as `python examples/run_grpo.py` runs it: the recipe YAML
with its defaults chain (load_config), the Hydra-style overrides (parse_hydra_overrides),
OmegaConf resolution, MasterConfig (pydantic over the TypedDict configs), the tokenizer and
generation config, then grpo.setup: its sampling, batch and loss checks, logger,
checkpointing, dataloaders and the cluster layout assertions, up to the first
RayVirtualCluster, which places the GPUs. Ray is not started (init_ray is skipped, and so is
the logger's GPU monitor, which polls GPUs through Ray) and the
recipe's dataset, a Hugging Face download with Ray environment actors, is replaced by local
prompts without environments. Then Policy.__init__ runs on the train cluster's size, up to the
Ray queue and worker group it makes: the backend, world-size and TP>=4 batch checks.
"""

from __future__ import annotations

import os
import runpy
import sys
import typing
from pathlib import Path
from typing import Any

import typing_extensions

sys.path.insert(0, str(Path(__file__).parent))

from common import ReachedGPU, run_cases, run_check, stub_modules
from fixtures import PROMPT, write_tokenizer

SCRIPT = "examples/run_grpo.py"
# NeMo-RL asks Python 3.13; pydantic builds TypedDict schemas on 3.11 from the backport only
typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]
STUBS = ("torchvision",)


def prepare() -> None:
    stub_modules(STUBS)
    import nemo_rl.algorithms.grpo
    import nemo_rl.data.utils  # noqa: F401


def _prompts(tokenizer: Any, count: int) -> list[dict[str, Any]]:
    import torch

    ids = torch.tensor(tokenizer(PROMPT)["input_ids"])
    message = {"role": "user", "content": PROMPT, "token_ids": ids}
    return [
        {
            "message_log": [message],
            "length": len(ids),
            "extra_env_info": None,
            "loss_multiplier": 1.0,
            "idx": i,
            "task_name": "math",
        }
        for i in range(count)
    ]


class _Cluster:
    """The train cluster as Policy.__init__ reads it before making workers: its size."""

    def __init__(self, bundle_ct_per_node_list: list[int], num_gpus_per_node: int, **_: Any):
        self.bundles = bundle_ct_per_node_list
        self.num_gpus_per_node = num_gpus_per_node
        self._sorted_bundle_indices = None

    def world_size(self) -> int:
        return sum(self.bundles)


def check(case: dict[str, Any]) -> list[dict[str, Any]]:
    os.chdir(case["cwd"])
    write_tokenizer(Path(case["model_dir"]))
    import nemo_rl.algorithms.grpo as grpo
    import nemo_rl.data.utils as data_utils
    import nemo_rl.distributed.virtual_cluster as virtual_cluster
    import nemo_rl.models.policy.lm_policy as lm_policy
    import nemo_rl.utils.logger as logger

    seen: dict[str, Any] = {}

    def cluster(*_: Any, **kwargs: Any) -> None:
        seen.setdefault("train_cluster", kwargs)  # the policy's (or train) cluster comes first
        raise ReachedGPU("RayVirtualCluster (Ray placement groups of GPUs)")

    def setup(master_config: Any, tokenizer: Any, *args: Any, **kwargs: Any) -> Any:
        seen["config"], seen["tokenizer"] = master_config, tokenizer
        return original_setup(master_config, tokenizer, *args, **kwargs)

    def response_data(tokenizer: Any, data_config: Any, env_configs: Any = None, **_: Any) -> Any:
        rows = _prompts(tokenizer, case["rows"])
        return rows, rows, {}, {}

    def queue(*_: Any, **__: Any) -> None:
        raise ReachedGPU("RayQueue, then the policy's worker group on the GPUs")

    original_setup = grpo.setup
    virtual_cluster.init_ray = lambda *_, **__: None
    logger.RayGpuMonitorLogger.start = lambda self: None  # polls the GPUs through Ray
    grpo.RayVirtualCluster = cluster
    grpo.setup = setup
    data_utils.setup_response_data = response_data
    lm_policy.RayQueue = queue
    sys.argv = [SCRIPT, *case["argv"]]
    roots = case["roots"]
    name = "load_config, overrides, MasterConfig, grpo.setup to the GPU cluster"
    rows = [run_check(name, roots, lambda: runpy.run_path(SCRIPT, run_name="__main__"))]
    if "train_cluster" in seen and "config" in seen:
        train = _Cluster(**seen["train_cluster"])
        policy = seen["config"].policy
        rows.append(
            run_check(
                f"Policy.__init__ before its workers (train cluster of {train.world_size()} GPUs)",
                roots,
                lambda: lm_policy.Policy(train, policy, seen["tokenizer"]),
            )
        )
    return rows


if __name__ == "__main__":
    run_cases(check, prepare)
