"""slime's entry point is the `train.py` at its checkout's root; review takes a script path for
it only where the path can reach that root. AReaL's agent examples run their own
`examples/<name>/train.py` (inclusionAI/AReaL@4aef98d: `python3 examples/tau2/train.py --config
examples/tau2/config_30b_moe_airline.yaml`, examples/tau2/README.md L88); read as slime's, such a
launch got slime's defaults and a request for Megatron architecture flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review.shell import ShellError, command_arguments


@pytest.mark.parametrize(
    "entry",
    ["train.py", "./train.py", "/root/slime/train.py", "${REPO_ROOT}/train.py", "../train.py"],
)
def test_paths_that_reach_a_checkout_root_are_its_script(entry: str) -> None:
    words, _ = command_arguments(f"python3 {entry} --colocate\n", "train")
    assert words == ["--colocate"]


@pytest.mark.parametrize(
    "entry", ["examples/tau2/train.py", "./examples/countdown/train.py", "../x/train.py"]
)
def test_paths_down_into_folders_are_other_scripts(entry: str) -> None:
    with pytest.raises(ShellError, match="no `train` command"):
        command_arguments(f"python3 {entry} --config c.yaml\n", "train")


def test_an_areal_agent_example_is_not_read_as_slime(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 examples/tau2/train.py --config examples/tau2/config_30b_moe_airline.yaml\n"
    )
    done = CliRunner().invoke(cli, ["review", str(script), "--accelerator", "h100-sxm-80gb"])
    assert done.exit_code == 2
    assert done.output.startswith("Error: no launch of a mapped framework in the file")
    assert "Traceback" not in done.output
