"""One import name, `rlmguide`: the folders kb/, rules/ and cost/ install as its subpackages
(PyPI has unrelated packages named `kb` and `rules`; a user's `cost.py` must not shadow ours)."""

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.parametrize(
    ("name", "folder"),
    [("rlmguide.kb", "kb"), ("rlmguide.rules", "rules"), ("rlmguide.cost", "cost")],
)
def test_subpackages_import_from_their_folders(name: str, folder: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().parent == (REPO / folder).resolve()


def test_the_folders_are_not_top_level_names(tmp_path: Path) -> None:
    """Outside the checkout (where the working directory is not on the path), only
    `rlmguide` imports; a user's own `cost.py` is theirs."""
    (tmp_path / "cost.py").write_text("MINE = True\n")
    probe = (
        "import importlib.util as u, rlmguide.cost, cost; "
        "print([n for n in ('kb', 'rules') if u.find_spec(n)], cost.MINE)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[] True"


def test_the_wheel_holds_one_top_level_name(tmp_path: Path) -> None:
    """The built wheel, installed alone into a fresh environment, adds only `rlmguide`, and
    its subpackages and records are there (a recommendation runs from them)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(REPO)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("rlmguide-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"rlmguide"}
    assert "rlmguide/kb/records/models/qwen2.5-7b.yaml" in names
    assert any(n.startswith("rlmguide/rules/records/") for n in names)
    target = tmp_path / "env"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    # Dependencies from this environment, but no editable finder (.pth files of a path
    # entry that is not a site folder are not run) and no checkout on the path.
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    probe = (
        f"import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]"
        f" + [{str(target)!r}, {deps!r}]; "
        "import rlmguide.cost, rlmguide.kb.paths as p; "
        "from rlmguide.cli import cli; "
        f"assert rlmguide.cost.__file__.startswith({str(target)!r}), rlmguide.cost.__file__; "
        "assert p.RULES_ROOT[0].is_dir(); "
        f"cli(['recommend', {str(REPO / 'examples' / 'grpo-qwen2.5-7b-8xh100.yaml')!r},"
        " '--top', '1', '--format', 'json'])"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"RLMGUIDE_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"rank": 1' in done.stdout


def test_site_folder_is_not_a_package() -> None:
    import site

    assert not (REPO / "site" / "__init__.py").exists()
    assert Path(site.__file__).name == "site.py"


def test_nothing_below_the_command_line_imports_it() -> None:
    """The CLI is the top layer (DESIGN.md): the site generator and the libraries find what
    they share (the record roots) in kb.paths, so no module but `__main__` imports the CLI."""
    import ast

    importers = []
    for folder in ("kb", "rules", "cost", "rlmguide"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                if isinstance(node, ast.ImportFrom) and node.module == "rlmguide":
                    names = [f"rlmguide.{a.name}" for a in node.names]
                if "rlmguide.cli" in names and path.name != "cli.py":
                    importers.append(str(path.relative_to(REPO)))
    assert not importers
    assert (REPO / "site" / "hooks.py").read_text().count("rlmguide.cli") == 0


def test_the_site_generator_is_one_package() -> None:
    """Pages by record kind, computed pages and the build live in rlmguide.sitegen; the top
    of rlmguide holds the Python API and its results, the command line over it, its output
    formats and what both layers share."""
    top = sorted(p.name for p in (REPO / "rlmguide").glob("*.py"))
    assert top == [
        "__init__.py", "__main__.py", "api.py", "cli.py", "errors.py", "formats.py",
        "knowledge.py", "report.py", "results.py", "runreport.py", "survey_report.py",
        "timeline.py",
    ]  # fmt: skip
    assert (REPO / "rlmguide" / "sitegen" / "generate.py").is_file()
