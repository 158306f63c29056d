"""The frameworks' own start-up validation, run on every export (optional; never in the test
suite, and no framework is a dependency of rlmguide).

For each mapping record (kb/records/mappings) this makes a virtual environment outside the
repository with the framework at the mapping's version (from PyPI where PyPI carries that
version, else its source at the mapping's commit from a `fetch`ed snapshot put on the path),
exports every bundled example and every deployment with that mapping, reads each script's
arguments with rlmguide's shell reader (nothing is executed) against a local model folder
(config.json from the model record, a small tokenizer, no weights), and runs the framework's
own configuration path on them in that environment (bench/fwchecks/*_check.py) up to the
first call that would take a GPU (verl's training workers are then constructed as rank 0 of
their pool on torch's fake process group). It prints, per framework and script, what passed
and what raised (exception, first line, framework file:line), what cannot be checked without
GPUs, then a summary table.

Where an export as written raises on something every launch of the framework sets outside
the export (a run length, validation data, an environment variable its own scripts set), the
script runs again with each such setting added in turn ("+ ...", each keeping the ones
before), so the checks behind each run too; the first run's verdict stands.

Run: python bench/framework_checks.py [--workdir DIR] [--snapshots DIR] [--only MAPPING]...
  [--no-install] [--timeout S] [--json FILE]
The first run installs about 2-3 GB per framework (CPU torch, no CUDA); later runs reuse it.
Snapshots: `fetch` each repository below (volcengine/verl, verl-project/verl-recipe,
OpenRLHF/OpenRLHF, THUDM/slime, NVIDIA/Megatron-LM, NVIDIA-NeMo/RL); --snapshots is the folder
holding owner+name/repo.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots

from rlmguide.cli import cli
from rlmguide.review.shell import ShellError, command_arguments, lex

REPO = Path(__file__).resolve().parent.parent
CHECKERS = Path(__file__).resolve().parent / "fwchecks"
PYTHON = "python3.11"
TORCH = "torch==2.13.0"  # the CPU build on this machine's disk (a CUDA build is several GB)
ROWS = 4096  # local prompts: more than any export's prompts per step


@dataclass(frozen=True)
class Source:
    """A repository at a commit, from a snapshot: `path` puts it on PYTHONPATH, `patches` are
    files of another source applied to it (slime's image patches Megatron-LM)."""

    repo: str  # owner+name under --snapshots
    commit: str
    path: bool = True
    patches: tuple[tuple[str, str], ...] = ()  # (source name, file in it)


@dataclass(frozen=True)
class Repair:
    """What every launch of the framework sets outside the export, added in the second run
    when the export lacks it: arguments when none of `absent` is given, or environment."""

    reason: str
    absent: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Spec:
    mapping: str
    framework: str
    checker: str
    sources: dict[str, Source]
    installs: tuple[tuple[str, ...], ...]
    """pip install argument lists, in order, each under the torch constraint; a source's
    requirements file is written `@source:file`, and `-source` installs a source's package."""
    uninstall: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    """Requirement names dropped from a source's requirements file (CUDA builds)."""
    left_out: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    """The framework's package folders, `source:folder` or `site:folder` (for file:line)."""
    cwd_links: tuple[tuple[str, str], ...] = ()
    """(source, folder) linked into each case's working folder, as a launch from a checkout
    sees it ("." links the whole source under its name: a submodule)."""
    environment: tuple[tuple[str, str], ...] = ()
    """The framework's container environment the launch runs in."""
    repairs: tuple[Repair, ...] = ()
    gpu_only: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


VERL = "verl-0.7.0-125-gb178a3cd5"
VERL_08 = "verl-0.8.0"
VERL_VALIDATION_DATA = Repair(
    "validation data: verl reads data.val_files at start-up; its default "
    "~/data/rlhf/gsm8k/test.parquet is opened as written (no ~ expansion)",
    absent=("data.val_files",),
    arguments=("data.val_files={data}",),
)
VERL_ENGINE_START = "vLLM/SGLang engine start (memory fraction, max_num_seqs against the KV cache)"
SLIME_PIN = "slime image (docker/Dockerfile at 624b824)"
SPECS: dict[str, Spec] = {
    VERL: Spec(
        mapping=VERL,
        framework="verl",
        checker="verl_check.py",
        sources={
            "verl": Source("volcengine+verl", "b178a3cd56f58b2d502255daba591e92833930a7"),
            # verl's recipe/ submodule (DAPO's trainer) at the commit the verl tree pins
            "recipe": Source(
                "verl-project+verl-recipe", "21892b9276936efab5375c3f6b8415e472ef7118", path=False
            ),
        },
        # verl's own install_requires (its setup.py at the commit); the package itself is then
        # removed so the checkout runs, as verl's launch scripts run it
        installs=(
            ("-verl", "transformers<5", "pyarrow>=19,<21", "datasets<5", "pyzmq"),
            # the versions verl's docker/Dockerfile.stable.vllm builds: the driver imports the
            # worker modules, which import them
            ("--no-deps", "vllm==0.12.0", "megatron-core==0.15.0", "mbridge"),
        ),
        uninstall=("verl",),
        left_out=(
            "PyPI has verl 0.7.0 and 0.8.0, not the mapped commit (v0.7.0-125): the source at "
            "b178a3cd is on the path, with setup.py's install_requires from PyPI",
            "transformers<5: verl/utils/model.py imports AutoModelForVision2Seq, which 5.x removed",
            "pyarrow<21 and datasets<5: the last that import beside verl's numpy<2",
            "vllm==0.12.0, megatron-core==0.15.0 (the versions of verl's Dockerfile.stable.vllm) "
            "and mbridge without their dependencies: the driver imports the worker modules that "
            "import them; nothing of them runs",
            "sglang, flash-attn, liger-kernel, transformer-engine: CUDA builds, not imported "
            "before the workers",
            f"torch: {TORCH} CPU instead of the image's 2.9.1 CUDA build",
        ),
        roots=("verl:verl", "recipe:dapo"),
        cwd_links=(("verl", "verl"), ("recipe", ".")),
        repairs=(VERL_VALIDATION_DATA,),
        gpu_only=(
            "the workers past __init__ (they run here as rank 0 of their pool on torch's fake "
            "process group, Megatron's CUDA seeding skipped): init_model's model build, FSDP "
            "wrapping, weight loading, optimizer; ranks other than 0",
            VERL_ENGINE_START,
        ),
    ),
    VERL_08: Spec(
        mapping=VERL_08,
        framework="verl",
        checker="verl_check.py",
        sources={
            "verl": Source("verl-project+verl", "7aed6b230776f963fa09509c10d9c3a767d1102c"),
            # the recipe/ submodule at the commit the v0.8.0 tree pins
            "recipe": Source(
                "verl-project+verl-recipe", "e7f889574b8301cc0f0fc1d57c6d67f31ffeb689", path=False
            ),
        },
        installs=(
            # verl's install_requires at v0.8.0 (the package then removed, as above), the
            # image's transformers, and what the driver's imports need beside them (verl's
            # requirements.txt lists uvicorn and fastapi; its rollout/llm_server.py and vLLM
            # import cachetools)
            (
                "-verl",
                "transformers==5.3.0",
                "pyarrow>=19,<21",
                "datasets<5",
                "pyzmq",
                "cachetools",
                "uvicorn",
                "fastapi",
            ),
            # the versions verl's docker/Dockerfile.stable.vllm at v0.8.0 builds
            ("--no-deps", "vllm==0.20.2", "megatron-core==0.16.1", "mbridge"),
        ),
        uninstall=("verl",),
        left_out=(
            "the source at the v0.8.0 tag (7aed6b23) is on the path, as verl's launch scripts "
            "run it from a checkout, with setup.py's install_requires from PyPI",
            "transformers==5.3.0 (the image's); pyarrow<21 and datasets<5 beside numpy<2",
            "vllm==0.20.2, megatron-core==0.16.1 (the image's Megatron-LM core_v0.16.1) and "
            "mbridge without their dependencies: the driver imports the worker modules that "
            "import them; nothing of them runs",
            "sglang, flash-attn, liger-kernel, transformer-engine: CUDA builds, not imported "
            "before the workers",
            f"torch: {TORCH} CPU instead of the image's 2.11.0 CUDA build",
        ),
        roots=("verl:verl", "recipe:dapo"),
        cwd_links=(("verl", "verl"), ("recipe", ".")),
        repairs=(VERL_VALIDATION_DATA,),
        gpu_only=(
            "the engine workers past __init__ (rank 0 of their pool on torch's fake process "
            "group): the model build, FSDP/Megatron wrapping, weight loading, optimizer; "
            "ranks other than 0",
            VERL_ENGINE_START,
        ),
    ),
    "openrlhf-0.11.0": Spec(
        mapping="openrlhf-0.11.0",
        framework="openrlhf",
        checker="openrlhf_check.py",
        sources={
            "openrlhf": Source(
                "OpenRLHF+OpenRLHF", "3c3be6234e0cb353e76bb8019947db9dfe99fca7", path=False
            )
        },
        installs=(
            ("--no-deps", "openrlhf==0.11.0"),
            ("--no-build-isolation", "@openrlhf:requirements.txt"),
            ("--no-deps", "vllm==0.27.1"),  # setup.py's vllm extra
        ),
        exclude=("flash-attn",),
        left_out=(
            "flash-attn==2.8.3: CUDA build; an import stub stands in (OpenRLHF imports its "
            "padding helpers at module level and calls them only on GPUs)",
            "vllm==0.27.1 without its dependencies (it pins a CUDA torch); imported, never run",
            f"torch: {TORCH} CPU",
        ),
        roots=("site:openrlhf",),
        gpu_only=(
            "actor init_model_from_pretrained: DeepSpeed's config (train batch = micro batch x "
            "accumulation x world size), ring attention groups, model loading",
            "vLLM engines (gpu_memory_utilization, tensor parallel groups)",
            "PPOTrainer (a Ray actor made after the GPU actors)",
        ),
    ),
    "openrlhf-0.8.9.post1-5-gc250c21a": Spec(
        mapping="openrlhf-0.8.9.post1-5-gc250c21a",
        framework="openrlhf",
        checker="openrlhf_check.py",
        sources={
            "openrlhf": Source("OpenRLHF+OpenRLHF", "c250c21a72176720e11aaf4fedcd6cf853d3df8b")
        },
        installs=(
            ("--no-build-isolation", "@openrlhf:requirements.txt"),
            ("--no-deps", "vllm==0.10.0"),
        ),
        exclude=("flash-attn",),
        left_out=(
            "PyPI has 0.8.9.post1, five commits before the mapped c250c21a: the source at the "
            "commit is on the path, its requirements.txt from PyPI",
            "flash-attn==2.8.2: CUDA build; an import stub stands in",
            "vllm==0.10.0 without its dependencies (it pins a CUDA torch); imported, never run",
            f"torch: {TORCH} CPU",
        ),
        roots=("openrlhf:openrlhf",),
        gpu_only=(
            "actor init_model_from_pretrained: DeepSpeed's config and model loading",
            "vLLM engines",
        ),
    ),
    "slime-0.3.1-38-g624b824": Spec(
        mapping="slime-0.3.1-38-g624b824",
        framework="slime",
        checker="slime_check.py",
        sources={
            "slime": Source("THUDM+slime", "624b824a898ab0ec1fcb4d373004c7f3852bf515"),
            "megatron": Source(
                "NVIDIA+Megatron-LM",
                "1dcf0dafa884ad52ffb243625717a3471643e087",
                patches=(
                    ("slime", "docker/patch/latest/megatron.patch"),
                    ("slime", "docker/patch/latest/megatron-sglang-aligned.patch"),
                ),
            ),
        },
        installs=(
            ("--no-deps", "sglang==0.5.15.post1"),
            # slime's requirements, SGLang 0.5.15.post1's pins, what its server_args imports
            (
                "@slime:requirements.txt",
                "transformers==5.12.1",
                "blobfile==3.0.0",
                "numpy<2",
                "einops",
                "triton",
                "watchfiles",
                "IPython",
                "pyzmq",
                "partial_json_parser",
                "sentencepiece",
                "orjson",
                "msgspec",
                "uvloop",
                "fastapi",
                "uvicorn",
                "pybase64",
            ),
        ),
        left_out=(
            "slime is not on PyPI: its source at 624b824 is on the path; Megatron-LM at "
            f"1dcf0daf (the {SLIME_PIN}) with the image's megatron.patch and "
            "megatron-sglang-aligned.patch applied, from its source (megatron-core's wheel has no "
            "megatron.training, where validate_args lives)",
            "sglang==0.5.15.post1 (the image's) without its dependencies (CUDA torch 2.11, "
            "sgl-kernel, flashinfer): its argument parser and checks import, nothing runs; the "
            "image's sglang patches are not applied",
            "sglang-router from PyPI instead of the image's slime build of 0.3.2",
            "transformer-engine, apex, DeepEP, DeepGEMM, flash-attn: CUDA builds",
            "torchvision: an import stub (PyPI's does not import beside CPU torch 2.13)",
            f"torch: {TORCH} CPU",
        ),
        roots=("slime:slime", "slime:slime_plugins", "megatron:megatron"),
        repairs=(
            Repair(
                "the run length: slime asserts --num-rollout or --num-epoch",
                absent=("--num-rollout", "--num-epoch"),
                arguments=("--num-rollout", "100"),
            ),
            Repair(
                "slime's run scripts pass CUDA_DEVICE_MAX_CONNECTIONS=1 in the Ray job's "
                "runtime env; Megatron asserts it for TP or CP > 1 before Blackwell",
                environment=(("CUDA_DEVICE_MAX_CONNECTIONS", "1"),),
            ),
        ),
        gpu_only=(
            "Megatron's initialize_model_parallel (world size divisible by TP x PP x CP, EP "
            "within DP x CP), the model build and checkpoint load",
            "SGLang engines (mem-fraction-static, EP within the engine's TP group)",
        ),
        notes=(
            "torch.cuda device queries (Megatron branches on the GPU architecture) answer "
            "with the scenario's GPU's compute capability",
        ),
    ),
    "nemo-rl-0.1.0-1338-g7ea279abf": Spec(
        mapping="nemo-rl-0.1.0-1338-g7ea279abf",
        framework="nemo-rl",
        checker="nemo_rl_check.py",
        sources={"nemo-rl": Source("NVIDIA-NeMo+RL", "7ea279abfbeb698b092856d0dab61e7cf39bc909")},
        installs=(
            # the pyproject dependencies the configuration path imports
            (
                "transformers>=5.5.0,<5.9.0",
                "ray[default]>=2.55.1",
                "omegaconf",
                "hydra-core",
                "pydantic",
                "datasets>=4.0.0",
                "torchdata",
                "wandb",
                "tensorboard",
                "rich",
                "math-verify",
                "accelerate>=0.26",
                "numpy",
                "colored==2.2.3",
                "tiktoken",
                "sentencepiece",
                "blobfile",
                "matplotlib",
                "sympy>=1.14.0",
                "pyzmq",
                "tensordict",
                "zstandard",
                "pybase64",
                "nvidia-ml-py",
                "debugpy",
                "nvtx",
                "mlflow",
                "swanlab",
                "num2words",
                "soundfile",
            ),
        ),
        left_out=(
            "nemo-rl is not on PyPI (0.0.0 is a placeholder): its source at 7ea279abf is on the "
            "path, without its git submodules (Megatron-Bridge, Automodel: worker-side)",
            "Python 3.11 instead of 3.13: typing.TypedDict is swapped for typing_extensions' "
            "backport so pydantic builds NeMo-RL's TypedDict configs",
            "vllm, flash-attn, mamba-ssm, transformer-engine, deep_ep, nixl, mooncake, "
            "TransferQueue (git), nccl4py, cuda-bindings, tilelang, fastokens: CUDA builds or "
            "worker-side",
            "torchvision: an import stub; open-clip-torch, timm: not installed (multimodal)",
            f"torch: {TORCH} CPU instead of 2.11.0",
            "data: the recipe's dataset (a Hugging Face download, Ray environment actors) is "
            "replaced by local prompts",
        ),
        roots=("nemo-rl:nemo_rl", "nemo-rl:examples"),
        cwd_links=(("nemo-rl", "examples"),),
        # NeMo-RL's container sets it (docker/Dockerfile L163); Policy refuses Megatron without it
        environment=(("TORCH_CUDA_ARCH_LIST", "9.0 10.0"),),
        gpu_only=(
            "the policy workers (DTensor/Megatron setup: context parallelism with sequence "
            "packing, automodel/setup.py; Megatron parallel state) and vLLM generation workers",
            "run_grpo's async-GRPO checks, which follow setup()",
        ),
    ),
}

# slime's model scripts (scripts/models/) for model records whose names differ
SLIME_MODELS = {
    "deepseek-r1": "deepseek-v3",
    "qwen3-4b-thinking-2507": "qwen3-4B-Instruct-2507",
    "qwen2.5-math-7b": "qwen2.5-7B",
    "llama-3.1-8b": "llama3.1-8B-Instruct",
    "llama-3.2-3b": "llama3.2-3B-Instruct",
}
# compute capability by accelerator family (NVIDIA's CUDA GPU table), for slime's device queries
CAPABILITY = {
    "a100": [8, 0],
    "h100": [9, 0],
    "h800": [9, 0],
    "h200": [9, 0],
    "h20": [9, 0],
    "b200": [10, 0],
}


# --- environments --------------------------------------------------------------------------


def run(command: list[str], log: Path, **kwargs: Any) -> None:
    with open(log, "a") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {shlex.join(command)}; see {log}")


def source_dir(work: Path, name: str, source: Source) -> Path:
    return work / "src" / f"{name}-{source.commit[:9]}"


def extract(work: Path, snapshots: Path, spec: Spec) -> dict[str, Path]:
    """Each source at its commit (git archive of the snapshot), patched, once."""
    found: dict[str, Path] = {}
    for name, source in spec.sources.items():
        target = source_dir(work, name, source)
        found[name] = target
        if (target / ".complete").is_file():
            continue
        git = snapshots / source.repo / "repo"
        if not git.is_dir():
            sys.exit(
                f"no snapshot of {source.repo} in {snapshots}: fetch github:"
                f"{source.repo.replace('+', '/')} first"
            )
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "--git-dir", str(git), "archive", source.commit],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        for other, file in source.patches:
            patch = found.get(other) or source_dir(work, other, spec.sources[other])
            subprocess.run(["git", "apply", str(patch / file)], cwd=target, check=True)
        (target / ".complete").write_text(source.commit)
    return found


def requirements(work: Path, spec: Spec, file: Path) -> Path:
    """A source's requirements file without the excluded names."""
    kept = [
        line
        for line in file.read_text().splitlines()
        if re.split(r"[\s<>=!~\[;#]", line.strip(), maxsplit=1)[0].lower() not in spec.exclude
    ]
    out = work / "requirements" / f"{spec.mapping}-{file.name}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(kept) + "\n")
    return out


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def install(work: Path, spec: Spec, sources: dict[str, Path]) -> Path:
    """The framework's virtual environment (made once; `.installed` records the steps)."""
    venv = work / "venvs" / spec.mapping
    steps = json.dumps([spec.installs, spec.uninstall])
    marker = venv / ".installed"
    if marker.is_file() and marker.read_text() == steps:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = work / "logs" / f"install-{spec.mapping}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    print(f"installing {spec.mapping} into {venv} (log: {log}) ...", flush=True)
    run([PYTHON, "-m", "venv", str(venv)], log)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    constraint = work / "torch-constraint.txt"
    constraint.write_text(TORCH + "\n")
    run([*pip, "install", "-q", "-U", "pip"], log)
    run([*pip, "install", "-q", "-c", str(constraint), TORCH], log)
    for step in spec.installs:
        words: list[str] = []
        for word in step:
            if word.startswith("@"):
                name, file = word[1:].split(":", 1)
                words += ["-r", str(requirements(work, spec, sources[name] / file))]
            elif word.startswith("-") and word[1:] in sources:
                words.append(str(sources[word[1:]]))
            else:
                words.append(word)
        run([*pip, "install", "-q", "-c", str(constraint), *words], log)
    for package in spec.uninstall:
        run([*pip, "uninstall", "-q", "-y", package], log)
    marker.write_text(steps)
    return venv


def versions(venv: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {row["name"].lower(): row["version"] for row in json.loads(listed)}


# --- inputs: model folders, slime's model arguments ---------------------------------------


def hf_config(model: Any) -> dict[str, Any] | None:
    """config.json of the record's architecture (None for a family this does not know)."""
    family = model.family.lower()
    config: dict[str, Any] = {
        "num_hidden_layers": model.layers,
        "hidden_size": model.hidden,
        "num_attention_heads": model.heads,
        "num_key_value_heads": model.kv_heads,
        "intermediate_size": model.ffn,
        "vocab_size": model.vocab,
        "max_position_embeddings": model.max_context_tokens,
        "tie_word_embeddings": model.tied_embeddings,
        "torch_dtype": "bfloat16",
    }
    if model.head_dim:
        config["head_dim"] = model.head_dim
    moe = model.moe
    if family.startswith("qwen2"):
        kind, name = "qwen2", "Qwen2ForCausalLM"
    elif family.startswith("qwen3") and moe is not None:
        kind, name = "qwen3_moe", "Qwen3MoeForCausalLM"
        config |= {
            "num_experts": moe.experts,
            "num_experts_per_tok": moe.experts_per_token,
            "moe_intermediate_size": moe.expert_ffn,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        }
    elif family.startswith("qwen3"):
        kind, name = "qwen3", "Qwen3ForCausalLM"
    elif family.startswith("llama"):
        kind, name = "llama", "LlamaForCausalLM"
    elif family.startswith("deepseek") and moe is not None and model.mla is not None:
        kind, name = "deepseek_v3", "DeepseekV3ForCausalLM"
        mla = model.mla
        config |= {
            "n_routed_experts": moe.experts,
            "n_shared_experts": moe.shared_experts,
            "num_experts_per_tok": moe.experts_per_token,
            "moe_intermediate_size": moe.expert_ffn,
            "first_k_dense_replace": moe.dense_layers,
            "q_lora_rank": mla.q_lora_rank,
            "kv_lora_rank": mla.kv_lora_rank,
            "qk_nope_head_dim": mla.qk_nope_head_dim,
            "qk_rope_head_dim": mla.qk_rope_head_dim,
            "v_head_dim": mla.v_head_dim,
        }
    else:
        return None
    return {"architectures": [name], "model_type": kind, **config}


def slime_model_args(slime: Path, model_id: str) -> list[str] | None:
    """MODEL_ARGS of slime's script for the model (scripts/models/<model>.sh), as bash sets
    them: the scripts compute some (DeepSeek's MoE layer pattern) with loops. slime's own
    file, run by bash for its array only."""
    stem = SLIME_MODELS.get(model_id, model_id)
    found = [
        p for p in (slime / "scripts" / "models").glob("*.sh") if p.stem.lower() == stem.lower()
    ]
    if not found:
        return None
    printed = subprocess.run(
        ["bash", "-c", 'source "$0" >/dev/null; printf "%s\\0" "${MODEL_ARGS[@]}"', str(found[0])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return printed.split("\0")[:-1]


def flag(arguments: list[str], name: str) -> str | None:
    return arguments[arguments.index(name) + 1] if name in arguments else None


@dataclass
class Inputs:
    """What the scripts' `${NAME:?...}` inputs point to, per framework environment."""

    work: Path
    spec: Spec
    sources: dict[str, Path]
    models: dict[str, Any]
    folders: dict[str, Path | None] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.work / "inputs" / self.spec.mapping

    def model(self, model_id: str) -> Path | None:
        """A folder with the record's config.json (the checker adds a small tokenizer)."""
        if model_id in self.folders:
            return self.folders[model_id]
        record = self.models.get(model_id)
        config = hf_config(record) if record is not None and record.architecture else None
        folder: Path | None = None
        if config is not None:
            if "slime" in self.sources:  # the two figures slime compares and records lack
                args = slime_model_args(self.sources["slime"], model_id) or []
                for key, name, kind in (
                    ("rope_theta", "--rotary-base", float),
                    ("rms_norm_eps", "--norm-epsilon", float),
                ):
                    if (value := flag(args, name)) is not None:
                        config[key] = kind(value)
            folder = self.root / "models" / model_id
            folder.mkdir(parents=True, exist_ok=True)
            if (
                not (folder / "config.json").is_file()
                or json.loads((folder / "config.json").read_text()).get("model_type")
                != config["model_type"]
            ):
                (folder / "config.json").write_text(json.dumps(config, indent=2))
        self.folders[model_id] = folder
        return folder

    def environment(self, policy: str, reward: str | None) -> tuple[dict[str, str], str | None]:
        """The inputs for the shell reader, or the reason the script cannot be read here."""
        policy_dir = self.model(policy)
        if policy_dir is None:
            return {}, f"no Hugging Face architecture for model record {policy}"
        self.root.mkdir(parents=True, exist_ok=True)
        reward_file = self.root / "reward.py"
        reward_file.write_text("# the rule-based reward: read by the workers, not at start-up\n")
        checkpoint = self.root / "megatron-checkpoint"
        checkpoint.mkdir(exist_ok=True)
        data = self.root / ("train.parquet" if self.spec.framework == "verl" else "train.jsonl")
        if data.suffix == ".jsonl" and not data.is_file():
            data.write_text(
                "".join(
                    json.dumps({"prompt": "what is one plus two ?", "label": "three"}) + "\n"
                    for _ in range(ROWS)
                )
            )
        env = {
            "MODEL_PATH": str(policy_dir),
            "TRAIN_DATA": str(data),
            "VAL_DATA": str(data),
            "FP8_MODEL_PATH": str(policy_dir),
            "REWARD_FUNCTION": str(reward_file),
            "MEGATRON_CHECKPOINT": str(checkpoint),
        }
        if reward is not None and (reward_dir := self.model(reward)) is not None:
            env["REWARD_MODEL_PATH"] = str(reward_dir)
        if "slime" in self.sources:
            args = slime_model_args(self.sources["slime"], policy)
            if args is None:
                return {}, f"slime has no scripts/models/ script for {policy}"
            script = self.root / "model-args" / f"{policy}.sh"
            script.parent.mkdir(exist_ok=True)
            script.write_text(f"MODEL_ARGS=({shlex.join(args)})\n")
            env["MODEL_ARGS_SCRIPT"] = str(script)
        return env, None


# --- exports --------------------------------------------------------------------------------


@dataclass
class Export:
    origin: str  # examples/x.yaml or deployment:id
    name: str
    script: Path | None = None
    refused: str | None = None
    policy: str | None = None
    reward: str | None = None
    accelerator: str | None = None


def origins() -> list[tuple[str, list[str], dict[str, Any]]]:
    """(name, export arguments, scenario) of every bundled example and deployment."""
    found = []
    for path in sorted((REPO / "examples").glob("*.yaml")):
        scenario = yaml.safe_load(path.read_text())
        found.append((f"example:{path.stem}", [str(path)], scenario))
    deployments = load_catalog(record_roots(), ("deployment",)).of("deployment")
    for record_id, record in sorted(deployments.items()):
        scenario = record.scenario.model_dump(mode="json", exclude_unset=True)
        found.append((f"deployment:{record_id}", ["--deployment", record_id], scenario))
    return found


def export_all(work: Path, spec: Spec) -> list[Export]:
    runner = CliRunner()
    out = work / "scripts" / spec.mapping
    out.mkdir(parents=True, exist_ok=True)
    exports = []
    for name, arguments, scenario in origins():
        models = scenario.get("models", {})
        cluster = scenario.get("cluster", {})
        export = Export(
            origin=" ".join(arguments),
            name=name,
            policy=models.get("policy"),
            reward=models.get("reward"),
            accelerator=cluster.get("accelerator"),
        )
        script = out / f"{name.replace(':', '.')}.sh"
        result = runner.invoke(
            cli,
            [
                "export",
                *arguments,
                "--framework",
                spec.framework,
                "--framework-version",
                spec.mapping,
                "--out",
                str(script),
            ],
        )
        if result.exit_code == 0:
            export.script = script
        else:
            text = (result.output or str(result.exception)).strip()
            export.refused = text.splitlines()[0] if text else f"exit {result.exit_code}"
        exports.append(export)
    return exports


def launch_entries(spec: Spec) -> list[tuple[str, str]]:
    """(module the shell reader looks for, the entry's argv[0]) of each of the mapping's
    launch commands: `python3 -m MODULE`, `python3 train.py`, `uv run python examples/x.py`."""
    record = yaml.safe_load(
        (REPO / "kb" / "records" / "mappings" / f"{spec.mapping}.yaml").read_text()
    )
    entries = []
    for launch in record["launches"]:
        words = launch["command"].split()
        if "-m" in words:
            module = words[words.index("-m") + 1]
            entries.append((module, module))
        else:
            path = words[-1]
            entries.append((path.removesuffix(".py").replace("/", "."), path))
    return list(dict.fromkeys(entries))


def exported_environment(text: str, values: dict[str, Any]) -> dict[str, str]:
    """The variables the script exports (`export NAME=...` or `export NAME`)."""
    names = []
    for statement in lex(text):
        if statement and statement[0].raw == "export":
            names += [re.split(r"\+?=", w.raw, maxsplit=1)[0] for w in statement[1:]]
    return {n: v for n in names if isinstance(v := values.get(n), str)}


def read_launch(
    text: str, spec: Spec, environment: dict[str, str], path: Path
) -> tuple[str, list[str], Any] | None:
    """(entry, arguments, shell state) of the first of the mapping's launch commands found."""
    for module, entry in launch_entries(spec):
        try:
            argv, shell = command_arguments(text, module, environment, path)
        except ShellError:
            continue
        return entry, argv, shell
    return None


def case_for(export: Export, spec: Spec, inputs: Inputs, venv: Path) -> dict[str, Any] | str:
    """The checker's case for an export, or why it cannot be read here."""
    assert export.script is not None and export.policy is not None
    reward = export.reward if export.reward and export.reward in inputs.models else None
    environment, reason = inputs.environment(export.policy, reward)
    if reason is not None:
        return reason
    text = export.script.read_text()
    read = read_launch(text, spec, environment, export.script)
    if read is None:
        return "the shell reader found none of the mapping's launch commands"
    entry, argv, shell = read
    if shell.used_unknown or shell.unsourced:
        return (
            f"the script needs what is not set here: {sorted(shell.used_unknown) + shell.unsourced}"
        )
    site = site_packages(venv)
    roots = []
    for root in spec.roots:
        where, folder = root.split(":", 1)
        roots.append(str((site if where == "site" else inputs.sources[where]) / folder))
    cwd = inputs.work / "cwd" / spec.mapping
    cwd.mkdir(parents=True, exist_ok=True)
    for name, folder in spec.cwd_links:
        link = cwd / (name if folder == "." else folder)
        if not link.exists():
            link.symlink_to(inputs.sources[name] / folder)
    family = next(
        (
            k
            for k in sorted(CAPABILITY, key=len, reverse=True)
            if (export.accelerator or "").startswith(k)
        ),
        None,
    )
    case: dict[str, Any] = {
        "id": export.name.replace(":", "."),
        "entry": entry,
        "argv": argv,
        "roots": roots,
        "cwd": str(cwd),
        "home": str(inputs.work / "home" / spec.mapping),
        "model_dir": environment["MODEL_PATH"],
        "data": environment["TRAIN_DATA"],
        "rows": ROWS,
        "environment": dict(spec.environment) | exported_environment(text, shell.variables),
    }
    if family is not None:
        case["device"] = {
            "capability": CAPABILITY[family],
            "name": export.accelerator,
            "memory_bytes": 0,
        }
    return case


def repaired(case: dict[str, Any], spec: Spec) -> list[tuple[dict[str, Any], str]]:
    """The case with the framework's repairs it lacks added one at a time (each stage keeps the
    ones before it), with what each stage added: the failure behind each is seen."""
    stages: list[tuple[dict[str, Any], str]] = []
    argv, environment = list(case["argv"]), dict(case["environment"])
    given = {re.split(r"=", a, maxsplit=1)[0] for a in argv}  # --flag, --flag=v, key=v
    for repair in spec.repairs:
        added: list[str] = []
        if repair.arguments and not given & set(repair.absent):
            words = [a.format(data=case["data"]) for a in repair.arguments]
            argv = [*argv, *words]
            added.append(" ".join(words))
        for name, value in repair.environment:
            if name not in environment:
                environment = {**environment, name: value}
                added.append(f"{name}={value}")
        if added:
            stage = {
                **case,
                "id": f"{case['id']}+{len(stages) + 1}",
                "argv": argv,
                "environment": environment,
            }
            stages.append((stage, "; ".join(added)))
    return stages


# --- running and reporting ------------------------------------------------------------------


def check(
    work: Path, spec: Spec, venv: Path, sources: dict[str, Path], cases: list[dict], timeout: int
) -> dict[str, dict]:
    folder = work / "runs" / spec.mapping
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.json").write_text(json.dumps(cases, indent=1))
    path = [str(sources[n]) for n, s in spec.sources.items() if s.path]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for name in ("CUDA_DEVICE_MAX_CONNECTIONS", "TORCH_CUDA_ARCH_LIST"):
        env.pop(name, None)  # only what the case says
    results = folder / "results.jsonl"
    command = [
        str(venv / "bin" / "python"),
        str(CHECKERS / spec.checker),
        str(folder / "cases.json"),
        "--out",
        str(results),
        "--logs",
        str(folder / "logs"),
        "--timeout",
        str(timeout),
    ]
    with open(folder / "checker.log", "w") as log:
        done = subprocess.run(command, env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"{spec.checker} failed ({done.returncode}); see {folder / 'checker.log'}")
    return {row["id"]: row for row in map(json.loads, results.read_text().splitlines())}


def describe(row: dict[str, Any]) -> str:
    if row["status"] == "passed":
        return "passed" if row["stop"] == "returned" else f"passed (reached {row['stop']})"
    if row["status"] == "raised":
        origin = f" [raised in {row['origin']}]" if row.get("origin") else ""
        return f"RAISED {row['type']}: {row['message']} ({row.get('at', '?')}){origin}"
    return f"{row['status']}: {row.get('reason') or row.get('message', '')}"


def verdict(checks: list[dict[str, Any]]) -> str:
    statuses = {c["status"] for c in checks}
    return (
        "raised"
        if "raised" in statuses or "error" in statuses
        else ("passed" if statuses == {"passed"} else "not-checkable")
    )


def report(
    spec: Spec,
    installed: dict[str, str],
    exports: list[Export],
    reasons: dict[str, str],
    results: dict[str, dict],
    added: dict[str, list[str]],
) -> dict[str, int]:
    print(f"\n=== {spec.mapping} ({spec.framework}) ===")
    shown = (
        "torch",
        "transformers",
        "ray",
        "hydra-core",
        "omegaconf",
        "pydantic",
        "deepspeed",
        "vllm",
        "sglang",
        "sglang-router",
        "openrlhf",
        "numpy",
    )
    print("installed: " + ", ".join(f"{n} {installed[n]}" for n in shown if n in installed))
    for name, source in spec.sources.items():
        print(f"source: {name} at {source.commit[:12]}" + (" (on the path)" if source.path else ""))
    for line in spec.left_out:
        print(f"left out: {line}")
    for line in spec.notes:
        print(f"note: {line}")
    counts = {
        "exported": 0,
        "refused": 0,
        "unread": 0,
        "passed": 0,
        "raised": 0,
        "not-checkable": 0,
        "repaired passed": 0,
        "repaired raised": 0,
    }
    for export in exports:
        if export.refused is not None:
            counts["refused"] += 1
            continue
        counts["exported"] += 1
        case_id = export.name.replace(":", ".")
        print(f"\n{export.name}")
        if case_id in reasons:
            counts["unread"] += 1
            print(f"  not checked: {reasons[case_id]}")
            continue
        checks = results[case_id]["checks"]
        counts[verdict(checks)] += 1
        for row in checks:
            print(f"  {row['check']}: {describe(row)}")
            for note in row.get("notes", []):
                print(f"    note: {note}")
        if verdict(checks) == "raised" and added.get(case_id):
            for number, what in enumerate(added[case_id], 1):
                again = results[f"{case_id}+{number}"]["checks"]
                print(f"  + {what}:")
                for row in again:
                    print(f"    {row['check']}: {describe(row)}")
            counts[f"repaired {'passed' if verdict(again) == 'passed' else 'raised'}"] += 1
    refused = [e for e in exports if e.refused is not None]
    if refused:
        print(f"\nrefused by the exporter ({len(refused)}):")
        for export in refused:
            print(f"  {export.name}: {export.refused[:160]}")
    if spec.gpu_only:
        print("\nnot checkable without GPUs (after the stop):")
        for line in spec.gpu_only:
            print(f"  - {line}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/rlmguide-framework-checks"),
        help="virtual environments, sources and runs (outside the repository)",
    )
    parser.add_argument(
        "--snapshots",
        type=Path,
        default=Path("/work/.mirror"),
        help="folder of fetched snapshots (owner+name/repo git directories)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SPECS),
        metavar="MAPPING",
        help=f"check only these mappings (default: all of {', '.join(SPECS)})",
    )
    parser.add_argument("--no-install", action="store_true", help="use the environments as made")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per script")
    parser.add_argument("--json", type=Path, help="write every result to this file")
    options = parser.parse_args()
    work = options.workdir.resolve()
    if work == REPO or REPO in work.parents:
        sys.exit("--workdir must be outside the repository")
    models = load_catalog(record_roots(), ("model",)).of("model")
    table, everything = [], {}
    for spec in (SPECS[m] for m in (options.only or SPECS)):
        start = time.perf_counter()
        sources = extract(work, options.snapshots, spec)
        venv = work / "venvs" / spec.mapping
        if not options.no_install:
            venv = install(work, spec, sources)
        exports = export_all(work, spec)
        inputs = Inputs(work, spec, sources, models)
        cases, reasons, added = [], {}, {}
        for export in exports:
            if export.script is None:
                continue
            case = case_for(export, spec, inputs, venv)
            if isinstance(case, str):
                reasons[export.name.replace(":", ".")] = case
                continue
            cases.append(case)
            stages = repaired(case, spec)
            cases += [stage for stage, _ in stages]
            added[case["id"]] = [what for _, what in stages]
        results = check(work, spec, venv, sources, cases, options.timeout) if cases else {}
        counts = report(spec, versions(venv), exports, reasons, results, added)
        seconds = time.perf_counter() - start
        table.append((spec.mapping, counts, seconds))
        everything[spec.mapping] = {
            "cases": cases,
            "results": results,
            "unread": reasons,
            "refused": {e.name: e.refused for e in exports if e.refused},
        }
    print("\n=== summary: each export through its framework's own start-up checks ===")
    columns = (
        "exported",
        "refused",
        "unread",
        "passed",
        "raised",
        "not-checkable",
        "repaired passed",
        "repaired raised",
    )
    print(f"{'mapping':34}" + "".join(f"{c:>{len(c) + 2}}" for c in columns) + f"{'seconds':>9}")
    for mapping, counts, seconds in table:
        cells = "".join(f"{counts[c]:>{len(c) + 2}}" for c in columns)
        print(f"{mapping:34}{cells}{seconds:>9.0f}")
    print(
        "exported: scripts written (refused: the exporter refused); unread: not checked here "
        "(reason above); passed: reached the first GPU allocation as written; repaired: of the "
        "raised ones, where they end once the framework's usual outside settings are added"
    )
    if options.json:
        options.json.write_text(json.dumps(everything, indent=1, default=str))


if __name__ == "__main__":
    main()
