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
