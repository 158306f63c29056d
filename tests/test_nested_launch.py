"""Launches one process down: `bash -c "..."` after `srun`, `ray job submit ... --`, a script
that runs another, the module in a variable or an array. The reader follows them as bash
would (a child sees only what was exported or given on its command line) and never runs them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review.shell import ShellError, command_arguments

OPENRLHF = "openrlhf.cli.train_ppo_ray"


def _args(tmp_path: Path, text: str, module: str = OPENRLHF, name: str = "run.sh") -> list[str]:
    script = tmp_path / name
    script.write_text(text)
    words, _ = command_arguments(script.read_text(), module, path=script)
    return words


def test_a_launch_inside_bash_c_after_srun_and_ray_job_submit(tmp_path: Path) -> None:
    # the shape of OpenRLHF's examples/scripts/train_ppo_ray_slurm.sh (at 3c3be62): a head
    # start and a job submission, each inside `srun ... bash -c "..."`, the string continued
    # over lines, escaped quotes inside it, a loop over workers in between
    text = (
        "NODES=2\nport=6379\n"
        'srun --nodes=1 -w "$node_1" bash -c \\\n'
        '    "pip install ray && ray start --head --port=$port --block" &>> log &\n'
        'for ((i = 1; i < NODES; i++)); do\n  srun bash -c "ray start --block" &\ndone\n'
        "srun --overlap --nodes=1 bash -c \\\n"
        '"pip install ray \\\n'
        "&& ray job submit --address=http://localhost:8265 \\\n"
        '    --runtime-env-json=\'{\\"working_dir\\": \\"/openrlhf\\"}\' \\\n'
        "    -- python3 -m openrlhf.cli.train_ppo_ray \\\n"
        "    --actor.num_nodes 1 --actor.num_gpus_per_node $((NODES * 2)) \\\n"
        '    --data.apply_chat_template" &>> log\n'
    )
    assert _args(tmp_path, text) == [
        "--actor.num_nodes",
        "1",
        "--actor.num_gpus_per_node",
        "4",
        "--data.apply_chat_template",
    ]


def test_a_child_sees_what_was_exported_and_its_own_assignments(tmp_path: Path) -> None:
    (tmp_path / "inner.sh").write_text(
        'python3 -m openrlhf.cli.train_ppo_ray --a "${SHOWN:-unset}" --b "${HIDDEN:-unset}" '
        '--c "${GIVEN:-unset}" --d "${LATER:-unset}"\n'
    )
    text = "export SHOWN=1\nHIDDEN=2\nLATER=4\nexport LATER\nGIVEN=3 bash inner.sh\n"
    assert _args(tmp_path, text) == ["--a", "1", "--b", "unset", "--c", "3", "--d", "4"]
    # single quotes keep the text for the child, which expands it with its own variables
    text = (
        "export SHOWN=1\nHIDDEN=2\n"
        "bash -lc 'python3 -m openrlhf.cli.train_ppo_ray --a $SHOWN --b \"${HIDDEN:-x}\"'\n"
    )
    assert _args(tmp_path, text) == ["--a", "1", "--b", "x"]


@pytest.mark.parametrize(
    "line",
    [
        "MODULE=openrlhf.cli.train_ppo_ray\npython3 -m $MODULE --x 1",
        'CMD=(python3 -m openrlhf.cli.train_ppo_ray)\n"${CMD[@]}" --x 1',
        "exec python3 -m openrlhf.cli.train_ppo_ray --x 1",
        "torchrun --nproc_per_node 8 -m openrlhf.cli.train_ppo_ray --x 1",
        "accelerate launch --num_processes 8 -m openrlhf.cli.train_ppo_ray --x 1",
        "deepspeed --module openrlhf.cli.train_ppo_ray --x 1",
        "ray job submit --address=http://h:8265 -- python3 -m openrlhf.cli.train_ppo_ray --x 1",
        'sh -c "exec python3 -m openrlhf.cli.train_ppo_ray --x 1"',
        "nohup ./inner.sh > out.log 2>&1 &",
    ],
)
def test_the_module_is_found_however_it_is_started(tmp_path: Path, line: str) -> None:
    (tmp_path / "inner.sh").write_text("python3 -m openrlhf.cli.train_ppo_ray --x 1\n")
    assert _args(tmp_path, line + "\n") == ["--x", "1"]


def test_a_script_that_runs_itself_stops_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "loop.sh"
    script.write_text("bash loop.sh\nbash -c 'bash loop.sh'\n")
    start = time.monotonic()
    with pytest.raises(ShellError, match="nests too deeply"):
        command_arguments(script.read_text(), OPENRLHF, path=script)
    assert time.monotonic() - start < 5
    done = CliRunner().invoke(cli, ["review", str(script), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2
    assert done.output.strip().count("\n") == 0 and "nests too deeply" in done.output


def test_nothing_is_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"bash -c 'touch {marker}'\nsh -c \"touch {marker}\"\n"
    with pytest.raises(ShellError, match="no `"):
        _args(tmp_path, text)
    assert not marker.exists()


def test_a_child_script_not_found_is_named(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("bash missing_setup.sh\npython3 -m openrlhf.cli.train_ppo_ray --x 1\n")
    words, shell = command_arguments(script.read_text(), OPENRLHF, path=script)
    assert words == ["--x", "1"]
    assert shell.unsourced == ["missing_setup.sh"]


@pytest.mark.parametrize(
    ("tail", "kept"),
    [
        ("2>&1", []),  # verl's router-replay example ends its launch so
        ("> out.log 2>&1", []),
        (">>out.log", []),
        ("&> /dev/null", []),
        ("2> err.log --after 1", ["--after", "1"]),
        ("'>' 2>&1", [">"]),  # quoted: an argument, not a redirection
    ],
)
def test_redirections_are_the_shells_not_the_launchs(
    tmp_path: Path, tail: str, kept: list[str]
) -> None:
    text = f"python3 -m openrlhf.cli.train_ppo_ray --a 1 {tail}\n"
    assert _args(tmp_path, text) == ["--a", "1", *kept]
