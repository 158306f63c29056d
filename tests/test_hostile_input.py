"""Issue 30's hostile input, round 2: every failure it lists, kept as a reproducer. The promise
(README): exit 1 or 2 with a one-line error, in bounded time and memory, nothing from the input
run, no user file deleted.

Cases that used to hang run as processes under a timeout; the rest run in process.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_cli
from fuzz_corpus import WRONG_INPUT, Run, materialise

from rlmguide.cli import cli

REPO = Path(__file__).parent.parent
SMALL = REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml"
VERL = REPO / "tests" / "fixtures" / "review" / "verl-run_qwen2.5-32b.sh"
NEMO = REPO / "tests" / "fixtures" / "review" / "nemo-rl-5fb5889" / "examples" / "configs"
LAUNCH = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n"
BOUND = 30.0
"""Seconds any one of these cases may take on a loaded two-core machine (each takes well
under a second when alone)."""


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    start = time.monotonic()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.output, time.monotonic() - start


def refused(code: int, output: str, seconds: float, exit_code: int = 2) -> str:
    """The line of a refusal, after checking it is one line with the exit code, in time."""
    assert code == exit_code, output
    assert "internal error" not in output and "Traceback" not in output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert seconds < BOUND
    return lines[0]


def review(path: Path, *more: str) -> tuple[int, str, float]:
    return invoke("review", str(path), "--accelerator", "h100-sxm-80gb", *more)


def script(tmp_path: Path, text: str, name: str = "run.sh") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (a hole)."""
    with path.open("wb") as out:
        out.truncate(size)
    return path


# --- 2. review reads only regular text files, of bounded size ---------------------------------


@pytest.mark.parametrize("make", ["fifo", "dev-zero", "link-to-dev-zero", "5 MB", "3 GB"])
def test_review_refuses_what_is_not_a_small_regular_file(tmp_path: Path, make: str) -> None:
    target = tmp_path / "run.sh"
    if make == "fifo":
        os.mkfifo(target)
    elif make == "dev-zero":
        target = Path("/dev/zero")
    elif make == "link-to-dev-zero":
        target.symlink_to("/dev/zero")
    else:
        sparse(target, 5 * 2**20 if make == "5 MB" else 3 * 2**30)
    done = run_cli("review", str(target), "--accelerator", "h100-sxm-80gb", timeout=60)
    line = refused(done.returncode, done.stderr + done.stdout, 0)
    assert "cannot read" in line


@pytest.mark.parametrize("make", ["fifo", "dev-zero", "3 GB", "environ"])
def test_a_sourced_file_is_read_with_the_same_guard(tmp_path: Path, make: str) -> None:
    sourced = tmp_path / "env.sh"
    if make == "fifo":
        os.mkfifo(sourced)
    elif make == "dev-zero":
        sourced.symlink_to("/dev/zero")
    elif make == "environ":
        sourced.symlink_to("/proc/self/environ")
    else:
        sparse(sourced, 3 * 2**30)
    path = script(tmp_path, f"source {sourced.name}\n" + VERL.read_text())
    env = {**os.environ, "RLMGUIDE_SECRET_TOKEN": "hunter2-do-not-print"}
    done = subprocess_review(path, env)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout + done.stderr  # the environment is never shown
    assert "env.sh" in done.stdout  # listed as not sourced


def subprocess_review(path: Path, env: dict[str, str] | None = None) -> object:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "rlmguide", "review", str(path), "--accelerator", "a100-sxm-80gb"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("make", ["fifo", "dev-zero", "3 GB", "50 MB recipe"])
def test_recipe_defaults_are_read_with_the_same_guard(tmp_path: Path, make: str) -> None:
    parent = tmp_path / "base.yaml"
    if make == "fifo":
        os.mkfifo(parent)
    elif make == "dev-zero":
        parent.symlink_to("/dev/zero")
    else:
        sparse(parent, 3 * 2**30 if make == "3 GB" else 50 * 2**20)
    recipe = (
        parent if make == "50 MB recipe" else script(tmp_path, "defaults: base.yaml\n", "r.yaml")
    )
    done = run_cli("review", str(recipe), "--accelerator", "h100-sxm-80gb", timeout=60)
    line = refused(done.returncode, done.stderr + done.stdout, 0)
    assert "base.yaml" in line or "/dev/zero" in line


# --- 3. sql --timeout nan -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_sql_timeout_must_be_a_number(value: str) -> None:
    line = refused(*invoke("sql", "SELECT 1", "--timeout", value))
    assert "--timeout" in line


# --- 4. time and memory bombs ---------------------------------------------------------------


def test_a_megabyte_word_is_read_in_linear_time(tmp_path: Path) -> None:
    for word in ("x" * 1_000_000, "$B" * 500_000):
        path = script(tmp_path, "A=" + word + "\n" + VERL.read_text())
        code, output, seconds = review(path)
        assert code in (0, 2), output
        assert seconds < BOUND
    path = script(tmp_path, "A=" + "x" * 2_000_000 + "\n" + VERL.read_text())
    assert "1,048,576" in refused(*review(path))  # past a launch file's size


def test_deeply_nested_if_blocks_end_in_one_line(tmp_path: Path) -> None:
    path = script(tmp_path, "if true; then\n" * 50_000 + LAUNCH + "fi\n" * 50_000)
    assert "nest deeper" in refused(*review(path))


@pytest.mark.parametrize(
    "text",
    [
        "A=$((9**9**9))\n",
        "A=$((2**62 * 16 + 0x7fffffffffffffffffffffff))\n",
        "A=$((" + "+".join(["1"] * 100_000) + "))\n",
        "A=$((" + "1" * 50_000 + "))\n",
    ],
    ids=["power tower", "past 64 bits", "100,000 terms", "50,000 digits"],
)
def test_arithmetic_is_bash_64_bit_and_bounded(tmp_path: Path, text: str) -> None:
    code, output, seconds = review(script(tmp_path, text + VERL.read_text()))
    assert seconds < BOUND
    if code != 0:
        refused(code, output, seconds)


def test_arithmetic_wraps_as_bash_does() -> None:
    from rlmguide.review.shell import Shell

    shell = Shell()
    assert shell.arithmetic("2**63") == str(-(2**63))  # bash: -9223372036854775808
    assert shell.arithmetic("9223372036854775807 + 1") == str(-(2**63))
    assert shell.arithmetic("3**40") == str(3**40 % 2**64 - 2**64)  # 12157665459056928801
    assert shell.arithmetic("9**9**9").lstrip("-").isdigit()


@pytest.mark.parametrize(
    "text",
    [
        # fan-out through variables: each name is ten of the next, eight levels deep
        "".join(f'V{i}="{"+".join([f"V{i + 1}"] * 10)}"\n' for i in range(8)) + "V8=1\nA=$((V0))\n",
        # a value that doubles every line
        "A=x\n" + "A=$A$A\n" * 40,
        "A=x\n" + 'A+="$A"\n' * 40,
        # defaults inside defaults
        "A=" + "${X:-" * 3000 + "x" + "}" * 3000 + "\n",
    ],
    ids=["arithmetic fan-out", "doubling", "doubling +=", "nested defaults"],
)
def test_expansion_bombs_end_in_one_line(tmp_path: Path, text: str) -> None:
    refused(*review(script(tmp_path, text + VERL.read_text())))


def test_source_fan_out_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("source a.sh\nsource a.sh\nsource a.sh\n")
    code, output, seconds = review(script(tmp_path, "source a.sh\n" + VERL.read_text()))
    assert seconds < BOUND
    assert code in (0, 2), output
    if code:
        refused(code, output, seconds)


@pytest.mark.parametrize("bomb", ["diamond", "aliases", "interpolations"])
def test_recipe_bombs_end_in_one_line(tmp_path: Path, bomb: str) -> None:
    if bomb == "diamond":
        for level in range(40):
            (tmp_path / f"d{level}.yaml").write_text(
                f"defaults: [d{level + 1}.yaml, d{level + 1}.yaml]\nx{level}: 1\n"
            )
        (tmp_path / "d40.yaml").write_text("x: 1\n")
        recipe = script(tmp_path, "defaults: d0.yaml\n", "r.yaml")
    elif bomb == "aliases":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
        recipe = script(tmp_path, "\n".join(lines) + "\n", "r.yaml")
    else:
        lines = ["k0: xx"] + [f'k{i}: "${{k{i - 1}}}${{k{i - 1}}}"' for i in range(1, 60)]
        recipe = script(tmp_path, "\n".join(lines) + "\n", "r.yaml")
    refused(*review(recipe))


def test_a_mixed_cluster_has_a_bounded_number_of_parts(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(SMALL.read_text())
    data["cluster"] = {
        "parts": [
            {"name": f"p{i}", "accelerator": "h100-sxm-80gb", "nodes": 1, "gpus_per_node": 8}
            for i in range(60)
        ]
    }
    path = script(tmp_path, yaml.safe_dump(data), "mixed.yaml")
    line = refused(*invoke("recommend", str(path)))
    assert "cluster.parts" in line and "6" in line


# --- 5. internal errors on bad input ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "A=" + "${X:-" * 50_000 + "}" * 50_000,
        "A=$((" + "(" * 5000 + "1" + ")" * 5000 + "))",
    ],
    ids=["defaults 50,000 deep", "parentheses 5,000 deep"],
)
def test_deep_recursion_in_a_script_is_one_line(tmp_path: Path, text: str) -> None:
    refused(*review(script(tmp_path, text + "\n" + VERL.read_text())))


def test_long_chains_in_a_recipe_are_one_line(tmp_path: Path) -> None:
    for i in range(300):
        (tmp_path / f"c{i}.yaml").write_text(f"defaults: c{i + 1}.yaml\n")
    (tmp_path / "c300.yaml").write_text("x: 1\n")
    refused(*review(tmp_path / "c0.yaml"))
    lines = ["k0: 1"] + [f'k{i}: "${{k{i - 1}}}"' for i in range(1, 5000)]
    refused(*review(script(tmp_path, "\n".join(lines) + "\n", "chain.yaml")))


@pytest.mark.parametrize(
    "args",
    [
        ["--set", "plan.train=" + "[" * 5000 + "]" * 5000],
        ["--set", "cluster.nodes=" + "9" * 50_000],
        ["--set", "cluster.nodes=1" + "0" * 400],
        ["--nodes", "1" + "0" * 400],
        ["--set", "workload.prompt_tokens=1e400"],
    ],
    ids=["nested --set", "50,000 digits", "10^400 --set", "10^400 flag", "1e400"],
)
@pytest.mark.parametrize("command", ["recommend", "estimate", "export"])
def test_huge_and_deep_values_in_flags_are_one_line(command: str, args: list[str]) -> None:
    more = ["--framework", "verl"] if command == "export" else []
    refused(*invoke(command, str(SMALL), *args, *more))


@pytest.mark.parametrize(
    "body",
    [
        "cluster: " + "[" * 5000 + "]" * 5000,
        "cluster: {accelerator: h100-sxm-80gb, nodes: " + "9" * 50_000 + "}",
        "cluster: {accelerator: h100-sxm-80gb, nodes: 1" + "0" * 400 + "}",
        "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + "".join(
            f"a{i}: &a{i} [{', '.join(['*a' if i == 1 else f'*a{i - 1}'] * 10)}]\n"
            for i in range(1, 9)
        ),
    ],
    ids=["nested", "50,000 digits", "10^400", "alias bomb"],
)
def test_huge_and_deep_values_in_files_are_one_line(tmp_path: Path, body: str) -> None:
    path = script(tmp_path, body + "\n", "s.yaml")
    refused(*invoke("recommend", str(path)))


@pytest.mark.parametrize(
    "option", [["--nodes", "1" + "0" * 400], ["--gpus-per-node", "9" * 50_000]]
)
def test_huge_review_flags_are_one_line(option: list[str]) -> None:
    refused(*review(VERL, *option))


def test_huge_numbers_in_a_launch_are_one_line(tmp_path: Path) -> None:
    for value in ("9" * 50_000, "1" + "0" * 400, "1e400", "-1"):
        text = VERL.read_text().replace("trainer.nnodes=4", f"trainer.nnodes={value}")
        assert text != VERL.read_text()
        refused(*review(script(tmp_path, text)))


@pytest.mark.parametrize(
    "text",
    ["- a\n- b\n", "just text\n", "defaults: 123\n", "defaults: [{a: 1}]\n", "{}\n"],
    ids=["list", "string", "defaults 123", "defaults mapping", "empty"],
)
def test_a_recipe_of_the_wrong_shape_is_one_line(tmp_path: Path, text: str) -> None:
    refused(*review(script(tmp_path, text, "r.yaml")))


def test_recipe_numbers_that_are_not_finite_are_one_line(tmp_path: Path) -> None:
    recipe = NEMO / "recipes" / "llm" / "performance" / "grpo-qwen3-235b-16n8g.yaml"
    copy = tmp_path / "configs"
    shutil.copytree(NEMO, copy)
    mine = copy / recipe.relative_to(NEMO)
    text = mine.read_text()
    assert "num_nodes: 16" in text
    mine.write_text(text.replace("num_nodes: 16", "num_nodes: .inf"))
    refused(*review(mine, "--prompt-tokens", "128"))


def test_a_slime_flag_given_twice_is_read_as_argparse_does(tmp_path: Path) -> None:
    from test_review import _slime_tree

    run = _slime_tree(tmp_path)
    run.write_text(run.read_text().replace("--colocate", "--colocate --rollout-batch-size 8 16"))
    code, output, seconds = review(run, "--prompt-tokens", "512")
    assert seconds < BOUND
    if code:
        refused(code, output, seconds)


@pytest.mark.parametrize(
    "args",
    [
        ["export", str(SMALL), "--framework", "verl", "--out", "{tmp}/missing/run.sh"],
        ["export", str(SMALL), "--framework", "verl", "--out", "/dev/full"],
        ["export", str(SMALL), "--framework", "verl", "--out", "{tmp}"],
        ["recommend", str(SMALL), "--plot", "/dev/full"],
        ["recommend", str(SMALL), "--plot", "{tmp}/missing/t.svg"],
        ["schema", "--out", "/proc/rlmguide-schema"],
        ["db", "export", "--parquet", "/proc/rlmguide-data"],
    ],
    ids=[
        "missing folder",
        "full device",
        "a folder",
        "plot full",
        "plot missing",
        "schema",
        "db export",
    ],
)
def test_unwritable_outputs_are_one_line(tmp_path: Path, args: list[str]) -> None:
    folder = args[-1] == "{tmp}"  # click refuses a folder as a file: a usage error
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    refused(*invoke(*args), exit_code=2 if folder else 1)


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_an_output_onto_a_fifo_does_not_hang(tmp_path: Path, flag: str) -> None:
    fifo = tmp_path / "out.svg"
    os.mkfifo(fifo)
    command = (
        ["export", str(SMALL), "--framework", "verl"]
        if flag == "--out"
        else ["recommend", str(SMALL)]
    )
    done = run_cli(*command, flag, str(fifo), timeout=60)
    line = refused(done.returncode, done.stderr, 0, exit_code=1)
    assert "FIFO" in line or "reader" in line


# --- 7. the site address ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        'https://example.org/"><script>alert(1)</script>',
        "javascript:alert(1)",
        "https://",
        "ftp://example.org/",
        "https://example.org/a b/",
        "https://example.org/\nx",
    ],
)
def test_a_hostile_site_address_is_refused_in_one_line(tmp_path: Path, url: str) -> None:
    line = refused(
        *invoke("site", "build", "--out", str(tmp_path / "s"), env={"RLMGUIDE_SITE_URL": url})
    )
    assert "RLMGUIDE_SITE_URL" in line


def test_site_addresses_that_are_fine() -> None:
    from rlmguide.sitegen.sitebuild import site_url

    assert site_url({"RLMGUIDE_SITE_URL": "https://docs.example.org/rl/"}) == (
        "https://docs.example.org/rl/"
    )
    assert site_url({"RLMGUIDE_SITE_URL": "http://127.0.0.1:8000"}) == "http://127.0.0.1:8000/"
    assert site_url({}) is None


# --- 8. the cache build lock ------------------------------------------------------------------


def test_the_build_lock_wait_is_bounded_and_names_the_holder(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlmguide.kb import cache

    monkeypatch.setattr(cache, "LOCK_WAIT_SECONDS", 1.0)
    empty_cache.mkdir(parents=True, exist_ok=True)
    fd = os.open(empty_cache / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"4242 rlmguide sql\n")
        line = refused(*invoke("db", "path"), exit_code=1)
        assert "4242" in line and "lock" in line
    finally:
        os.close(fd)


# --- 9. one-line errors -----------------------------------------------------------------------


def test_a_recipe_yaml_error_is_one_line_and_quotes_no_other_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("token: hunter2\n  bad: [indent\n")
    recipe = script(tmp_path, f"defaults: {secret.name}\n", "r.yaml")
    line = refused(*review(recipe))
    assert "secret.yaml" in line and "hunter2" not in line


@pytest.mark.parametrize(
    "args",
    [
        ["recommend", "--top", "x"],
        ["no-such-command"],
        ["recommend", "--bogus"],
        ["sql"],
        ["--bogus"],
    ],
)
def test_usage_errors_are_one_line(args: list[str]) -> None:
    line = refused(*invoke(*args))
    assert line.startswith("Error: ") and "--help" in line


# --- 10. a boolean is not a count -------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        "cluster.nodes=true",
        "cluster.gpus_per_node=false",
        "workload.prompts_per_step=true",
        "plan.train.tp=true",
        "cluster.scale_out_gbps_per_gpu=true",
    ],
)
def test_a_boolean_is_not_a_number(change: str) -> None:
    line = refused(*invoke("recommend", str(SMALL), "--set", change))
    assert change.split("=")[0] in line


# --- 11. what review and sql show -------------------------------------------------------------


def test_sql_table_output_shows_control_characters_escaped() -> None:
    code, output, _ = invoke("sql", "SELECT chr(27) || '[31mred' || chr(7) AS x")
    assert code == 0
    assert "\x1b" not in output and "\x07" not in output
    assert "\\x1b[31mred\\x07" in output
    code, output, _ = invoke("sql", "SELECT chr(27) || '[31m' AS x", "--format", "json")
    assert "\\u001b[31m" in output  # data formats keep the value, JSON-escaped


# --- 12. wrong input a user types: one line naming the field or record ------------------------


@pytest.mark.parametrize(("run", "expected"), WRONG_INPUT, ids=[r.name for r, _ in WRONG_INPUT])
def test_wrong_input_is_one_line_naming_what_is_wrong(
    run: Run, expected: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    materialise(run, tmp_path)
    monkeypatch.chdir(tmp_path)
    line = refused(*invoke(*(a.replace("{dir}", str(tmp_path)) for a in run.args)))
    for text in expected:
        assert text in line, line
