"""verl's own start-up path on exported arguments (run in verl's virtual environment).

The entry module's Hydra main composes the config from the arguments exactly as a launch does
(`--config-name`, overrides, `+key`), then its TaskRunner.run runs in this process instead of
a Ray actor: worker classes by strategy, validate_config (the actor's and critic's config
dataclasses with their __post_init__ and validate, check_mutually_exclusive), the tokenizer,
reward manager, datasets and the trainer's constructor (dataloaders, step counts), up to
ResourcePoolManager.create_resource_pool, which would place the GPUs. Then the conversions the
GPU workers make first, run here on the CPU (RolloutConfig, HFModelConfig), and each training
worker's constructor as rank 0 of its pool on torch's fake process group.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import ReachedGPU, fake_world, run_cases, run_check, run_isolated
from fixtures import write_parquet, write_tokenizer

ENTRIES = ("verl.trainer.main_ppo", "verl.experimental.one_step_off_policy.main_ppo")
"""Imported before the cases fork; the DAPO recipe (recipe.dapo.main_dapo) imports per case,
from the working folder's recipe/."""


def prepare() -> None:
    for entry in ENTRIES:
        importlib.import_module(entry)


def _plain_class(runner: Any) -> Any:
    """A Ray actor class's own class (one-step-off decorates its TaskRunner with ray.remote)."""
    meta = getattr(runner, "__ray_metadata__", None)
    return meta.modified_class if meta is not None else runner


def check(case: dict[str, Any]) -> list[dict[str, Any]]:
    roots = case["roots"]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing and exiting
    os.environ["HOME"] = case["home"]  # what verl writes under ~ lands in a sandbox
    os.chdir(case["cwd"])
    write_tokenizer(Path(case["model_dir"]))
    write_parquet(Path(case["data"]), case["rows"])

    import verl.trainer.main_ppo as base
    from verl.experimental.one_step_off_policy.ray_trainer import OneStepOffRayTrainer
    from verl.single_controller.ray import base as ray_base
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import HFModelConfig

    captured: dict[str, Any] = {}

    def create_resource_pool(self: Any) -> None:
        captured["pools"] = self
        raise ReachedGPU("ResourcePoolManager.create_resource_pool (Ray placement groups of GPUs)")

    ray_base.ResourcePoolManager.create_resource_pool = create_resource_pool
    for trainer_class in (RayPPOTrainer, OneStepOffRayTrainer):

        def remember(self: Any, *args: Any, init: Any = trainer_class.__init__, **kwargs: Any):
            init(self, *args, **kwargs)
            captured["trainer"] = self

        trainer_class.__init__ = remember

    sys.path.insert(0, case["cwd"])  # `python3 -m` puts the working folder first (recipe/)
    module = importlib.import_module(case["entry"])

    def run_ppo(config: Any, task_runner_class: Any = None) -> None:
        captured["config"] = config
        runner = task_runner_class or getattr(module, "TaskRunner", base.TaskRunner)
        _plain_class(runner)().run(config)

    base.run_ppo = run_ppo  # one-step-off's main imports it from here when called
    module.run_ppo = run_ppo  # main_ppo's and the DAPO recipe's own
    # `python3 -m MODULE` runs main with __module__ == "__main__", for which Hydra reads its
    # config folder by file path (the one-step-off config folder is no Python package)
    module.main.__wrapped__.__module__ = "__main__"
    sys.argv = [module.__file__, *case["argv"]]
    rows = [
        run_check("launch (Hydra compose, TaskRunner.run to the GPU pools)", roots, module.main)
    ]
    config = captured.get("config")
    if config is None:
        return rows
    arr = config.actor_rollout_ref
    rows.append(
        run_check(
            "RolloutConfig (worker, on CPU)", roots, lambda: omega_conf_to_dataclass(arr.rollout)
        )
    )
    rows.append(
        run_check(
            "HFModelConfig (worker, on CPU)",
            roots,
            lambda: omega_conf_to_dataclass(arr.model, dataclass_type=HFModelConfig),
        )
    )
    if "trainer" in captured and "pools" in captured:
        rows += worker_rows(captured["trainer"], captured["pools"], roots)
    return rows


def worker_rows(trainer: Any, pools: Any, roots: list[str]) -> list[dict[str, Any]]:
    """Each training worker's __init__ as init_workers would make it, as rank 0 of its pool
    on a fake process group: device meshes, Megatron's parallel groups (world size against TP
    x PP x CP, EP), the mini-batch normalisation by data-parallel size and its asserts. The
    model is built later, in init_model, on the GPU."""
    import megatron.core.tensor_parallel as tensor_parallel
    from verl.trainer.ppo.utils import Role

    mapping = trainer.role_worker_mapping
    # one step off, the actor and rollout are apart (0.8.0 starts the rollout replicas outside
    # the role mapping: verl/experimental/separation/utils.py L62-L92)
    roles = (
        [r for r in (Role.Actor, Role.Rollout) if r in mapping]
        if Role.Actor in mapping
        else [Role.ActorRolloutRef if Role.ActorRolloutRef in mapping else Role.ActorRollout]
    )
    if trainer.use_critic:
        roles.append(Role.Critic)
    if trainer.use_reference_policy and Role.RefPolicy in mapping:
        roles.append(Role.RefPolicy)
    rows = []
    for role in roles:
        cls = _plain_class(mapping[role])
        world = sum(pools.resource_pool_spec[pools.mapping[role]])
        if role == Role.Critic:
            kwargs = {"config": critic_config(cls, trainer.config.critic)}
        else:
            kwargs = {"config": trainer.config.actor_rollout_ref, "role": str(role)}

        def make(cls: Any = cls, kwargs: dict[str, Any] = kwargs, world: int = world) -> None:
            fake_world(world)
            # seeds the CUDA generator; nothing of the layout depends on it
            tensor_parallel.model_parallel_cuda_manual_seed = lambda *_, **__: None
            engines_as_on_gpus()
            worker = cls(**kwargs)
            if engine_worker(cls):
                worker.init_model()

        name = f"{cls.__name__}({role}).__init__ as rank 0 of {world} (fake process group)"
        if engine_worker(cls):
            name = f"{cls.__name__}({role}) __init__ and init_model's engines, rank 0 of {world}"
        rows.append(run_isolated(name, roots, make))
    return rows


def engine_worker(cls: Any) -> bool:
    """Whether the worker is 0.8.0's ActorRolloutRefWorker (or the one-step-off trainer's
    DetachActorWorker built on it), which lays out its training engines in init_model."""
    try:
        from verl.workers.engine_workers import ActorRolloutRefWorker
    except ImportError:
        return False
    return issubclass(cls, ActorRolloutRefWorker)


def engines_as_on_gpus() -> None:
    """0.8.0's engine workers (verl/workers/engine_workers.py) construct their training engines
    as on a GPU: the engine class registered for CUDA (EngineRegistry looks it up by device,
    verl/workers/engine/base.py L314-L321), whose constructor lays out the device meshes and
    parallel groups; the model build (TrainingWorker.reset: engine.initialize) is skipped, and
    the rollout engine (get_rollout_class), the NCCL checkpoint engine that syncs weights to it
    (CheckpointEngineRegistry.new) and init_model's closing release of cached GPU memory
    (aggressive_empty_cache) stop the check as the first GPU work. Earlier versions have no
    engine workers and are left as they are."""
    try:
        import verl.workers.engine.base as engine_base
        import verl.workers.engine_workers as engine_workers
    except ImportError:
        return

    engine_base.get_device_name = lambda: "cuda"

    def reset(self: Any) -> None:
        return None  # engine.initialize: the model build, FSDP/Megatron wrapping, optimizer

    def gpu(what: str) -> Any:
        def stop(*_: Any, **__: Any) -> Any:
            raise ReachedGPU(what)

        return stop

    engine_workers.TrainingWorker.reset = reset
    engine_workers.get_rollout_class = gpu("the rollout engine (vLLM/SGLang on the GPU)")
    engine_workers.CheckpointEngineRegistry.new = gpu("the NCCL checkpoint engine")
    engine_workers.aggressive_empty_cache = gpu("init_model's release of cached GPU memory")


def critic_config(cls: Any, config: Any) -> Any:
    """The critic worker's config as init_workers hands it over: the critic dataclass, which
    0.8.0's engine worker (TrainingWorker) takes as a TrainingWorkerConfig built from it
    (verl/trainer/ppo/ray_trainer.py L806-L825 at v0.8.0)."""
    from verl.utils.config import omega_conf_to_dataclass

    critic = omega_conf_to_dataclass(config)
    if cls.__name__ != "TrainingWorker":
        return critic
    from verl.workers.engine_workers import TrainingWorkerConfig

    engine = critic.engine
    engine.infer_max_token_len_per_gpu = critic.ppo_infer_max_token_len_per_gpu
    engine.max_token_len_per_gpu = critic.ppo_max_token_len_per_gpu
    return TrainingWorkerConfig(
        model_type="value_model",
        model_config=critic.model,
        engine_config=engine,
        optimizer_config=critic.optim,
        checkpoint_config=critic.checkpoint,
    )


if __name__ == "__main__":
    run_cases(check, prepare)
