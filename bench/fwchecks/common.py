"""What every framework checker shares. The checkers run inside a framework's own virtual
environment, never rlmguide's: this module uses the standard library only.

A checker gets a JSON file of cases (an export's argument list as the framework's entry point
receives it) and runs the framework's own configuration path on each in a forked child, up to
the first call that would allocate a GPU (a Ray placement group, an engine or worker actor),
where a patched function raises `ReachedGPU`. It writes one JSON line per case.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import signal
import sys
import traceback
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


class ReachedGPU(Exception):
    """Raised by the patched call that would allocate GPUs: everything before it ran."""


class ArgumentsRefused(Exception):
    """argparse refused the arguments (it would print this and exit 2)."""


class NotCheckable(Exception):
    """A check that cannot run on this machine (no GPU, no CUDA build): the reason."""


# --- import stubs for CUDA-only packages ------------------------------------------------


class _StubMeta(type):
    """Attributes of a stub class are stub classes too (`InterpolationMode.NEAREST`)."""

    def __getattr__(cls, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _stub_class(f"{cls.__name__}.{attr}")


def _stub_class(name: str) -> type:
    def refuse(*_: Any, **__: Any) -> Any:
        raise NotCheckable(f"{name} is a stub on this machine (a GPU-only or left-out package)")

    return _StubMeta(name, (), {"__init__": refuse, "__call__": refuse})


class _StubModule(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = _stub_class(f"{self.__name__}.{attr}")
        setattr(self, attr, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of `names` (and their submodules) give empty modules whose attributes are
    classes that raise when called: import-only stand-ins for GPU kernels the config path
    imports but never runs."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__version__ = "0+stub"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def stub_modules(names: Iterable[str]) -> None:
    sys.meta_path.insert(0, _StubFinder(names))


# --- the GPU a launch would see ------------------------------------------------------


def answer_device_queries(capability: list[int], name: str, memory_bytes: int) -> None:
    """torch.cuda.get_device_capability/get_device_properties answer as the scenario's GPU
    would (some argument checks branch on the architecture); nothing else of CUDA is faked."""
    import torch

    major, minor = capability
    properties = types.SimpleNamespace(
        major=major, minor=minor, name=name, total_memory=memory_bytes, multi_processor_count=0
    )
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_properties = lambda device=None: properties


# --- results --------------------------------------------------------------------------


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _short(path: str) -> str:
    """A path from the package folder on (…/site-packages/ray/x.py -> ray/x.py)."""
    marker = "/site-packages/"
    return path.split(marker, 1)[1] if marker in path else path


def raised_at(exc: BaseException, roots: list[str]) -> dict[str, str]:
    """Where `exc` was raised: `at`, the innermost traceback frame in the framework's own
    packages (`roots`: their folders, shown from the folder's parent, `verl/...`), and
    `origin`, the innermost frame, where it differs (a library the framework called)."""
    frames = traceback.extract_tb(exc.__traceback__)
    found: dict[str, str] = {}
    for frame in reversed(frames):
        root = next((r for r in roots if frame.filename.startswith(r.rstrip("/") + "/")), None)
        if root is not None:
            found["at"] = f"{os.path.relpath(frame.filename, os.path.dirname(root))}:{frame.lineno}"
            found["source"] = (frame.line or "").strip()
            break
    if frames:
        innermost = f"{_short(frames[-1].filename)}:{frames[-1].lineno}"
        if "at" not in found:
            found["at"] = innermost
            found["source"] = (frames[-1].line or "").strip()
        elif frames[-1] is not frame:
            found["origin"] = innermost
    return found


def outcome(exc: BaseException | None, roots: list[str], returned: str) -> dict[str, Any]:
    if exc is None:
        return {"status": "passed", "stop": returned}
    if isinstance(exc, ReachedGPU):
        return {"status": "passed", "stop": first_line(exc)}
    if isinstance(exc, NotCheckable):
        return {"status": "not-checkable", "reason": first_line(exc)}
    where = raised_at(exc, roots)
    message = f"exit {exc.code}" if isinstance(exc, SystemExit) else first_line(exc)
    if not message:  # a bare assert: its source line says what failed
        message = where.get("source", "")
    return {"status": "raised", "type": type(exc).__name__, "message": message, **where}


def _error(name: str, kind: str, message: str) -> dict[str, Any]:
    return {"check": name, "status": "error", "type": kind, "message": message}


def forked(body: Callable[[], Any], log: Path | None = None, timeout: int = 0) -> Any:
    """body() in a forked child, its JSON-able result returned (None if the child died or ran
    past `timeout` seconds): whatever it initialises process-wide (a process group, Megatron's
    or Hydra's state) dies with it. `log` takes the child's stdout and stderr."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if log is not None:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
            sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        try:
            result = body()
        except BaseException as exc:  # the checker itself failed: report, never hang
            traceback.print_exc()
            result = [_error("checker", type(exc).__name__, first_line(exc))]
        with os.fdopen(write, "w") as pipe:
            json.dump(result, pipe)
        os._exit(0)
    os.close(write)
    if timeout:
        signal.signal(signal.SIGALRM, lambda *_: os.kill(pid, signal.SIGKILL))
        signal.alarm(timeout)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    signal.alarm(0)
    try:
        return json.loads(text)
    except ValueError:
        return None


def _case(check: Callable[[dict[str, Any]], list[dict[str, Any]]], case: dict[str, Any]) -> Any:
    """One case as its launch runs: argparse's refusals raised (not exits), the script's
    exported environment set, CUDA's device queries answered as the scenario's GPU would."""

    def refuse(parser: argparse.ArgumentParser, message: str) -> None:
        raise ArgumentsRefused(f"{parser.prog}: error: {message}")

    argparse.ArgumentParser.error = refuse  # type: ignore[method-assign]
    os.environ.update(case.get("environment", {}))
    if "device" in case:
        answer_device_queries(**case["device"])
    return check(case)


def run_cases(
    check: Callable[[dict[str, Any]], list[dict[str, Any]]],
    prepare: Callable[[], None] | None = None,
) -> None:
    """The checker's main: read the cases, run each in a forked child (so one case's global
    state, Megatron's or Hydra's, never reaches the next), write a JSON line per case."""
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--timeout", type=int, default=300)
    options = parser.parse_args()
    cases = json.loads(options.cases.read_text())
    options.logs.mkdir(parents=True, exist_ok=True)
    if prepare is not None:
        log = options.logs / "_imports.log"
        with (
            open(log, "w") as out,
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
        ):
            try:
                prepare()  # heavy imports once, before forking
            except BaseException:
                traceback.print_exc()
    with open(options.out, "w") as out:
        for case in cases:
            log = options.logs / f"{case['id']}.log"
            results = forked(lambda case=case: _case(check, case), log, options.timeout)
            if results is None:
                message = f"no result (killed after {options.timeout} s or crashed)"
                results = [_error("checker", "Crash", message)]
            out.write(json.dumps({"id": case["id"], "log": str(log), "checks": results}) + "\n")
            out.flush()
            print(case["id"], " ".join(r["status"] for r in results), flush=True)


def run_check(
    name: str, roots: list[str], body: Callable[[], Any], returned: str = "returned"
) -> dict[str, Any]:
    """One named check: its outcome as a result row (`returned`: what reaching the end means)."""
    try:
        body()
    except BaseException as exc:  # every raise is a finding; SystemExit from argparse too
        traceback.print_exc()
        return {"check": name, **outcome(exc, roots, returned)}
    return {"check": name, **outcome(None, roots, returned)}


def run_isolated(
    name: str, roots: list[str], body: Callable[[], Any], returned: str = "returned"
) -> dict[str, Any]:
    """run_check in a forked child (see `forked`)."""
    row = forked(lambda: run_check(name, roots, body, returned))
    return row if row is not None else _error(name, "Crash", "no result")


def fake_world(size: int) -> None:
    """torch.distributed as rank 0 of `size`: init_process_group gives torch's fake process
    group (collectives do nothing) and groups made with a backend (NCCL, gloo) are fake ones,
    so code that lays out device meshes and parallel groups runs without GPUs or peers."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    os.environ.update(
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE=str(size),
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT="29500",
    )
    init, new_group = dist.init_process_group, dist.new_group

    def fake_init(*_: Any, **__: Any) -> None:
        init("fake", store=FakeStore(), rank=0, world_size=size)

    def fake_group(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("backend", None)
        kwargs.pop("pg_options", None)
        return new_group(*args, **kwargs)

    dist.init_process_group = fake_init
    dist.new_group = fake_group
