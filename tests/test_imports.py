"""PyPI has unrelated packages named `kb` and `rules`: ours must be the ones imported."""

import importlib
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.parametrize("name", ["kb", "rules", "cost", "rlmguide"])
def test_package_imports_from_this_repository(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().parent == (REPO / name).resolve()


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
    of rlmguide holds the command line, its output formats and what both layers share."""
    top = sorted(p.name for p in (REPO / "rlmguide").glob("*.py"))
    assert top == [
        "__init__.py", "__main__.py", "cli.py", "formats.py", "knowledge.py", "report.py",
        "runreport.py", "survey_report.py", "timeline.py",
    ]  # fmt: skip
    assert (REPO / "rlmguide" / "sitegen" / "generate.py").is_file()
