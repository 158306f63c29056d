"""A recipe's `defaults:` entries in Hydra's form (`../config/traj_envs@_here_`: a config name
without `.yaml`, and the package its keys land in) are read as Hydra reads them, and a ROLL
recipe of its agentic pipeline is refused by name.

ROLL composes its example configs with Hydra, and 35 of them at 8eb27cc2 pull their
environments in so; review looked for a file named `traj_envs@_here_` and stopped on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.review.recipe import RecipeError, load_chain

FIXTURES = Path(__file__).parent / "fixtures" / "review" / "roll-8eb27cc-agentic" / "examples"


def _tree(tmp_path: Path, entry: str) -> dict[str, object]:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "envs.yaml").write_text("group_size: 8\nenv: {name: sokoban}\n")
    (tmp_path / "run").mkdir()
    recipe = tmp_path / "run" / "recipe.yaml"
    recipe.write_text(f"defaults:\n  - {entry}\ngroup_size: 4\nseed: 1\n")
    return load_chain(recipe)


def test_a_here_entry_lands_at_the_recipes_own_level(tmp_path: Path) -> None:
    # the recipe's own value wins over the one it pulls in, as in a NeMo-RL chain
    assert _tree(tmp_path, "../config/envs@_here_") == {
        "group_size": 4,
        "env": {"name": "sokoban"},
        "seed": 1,
    }


def test_a_named_package_nests_the_entry_under_it(tmp_path: Path) -> None:
    assert _tree(tmp_path, "../config/envs@train.envs") == {
        "train": {"envs": {"group_size": 8, "env": {"name": "sokoban"}}},
        "group_size": 4,
        "seed": 1,
    }


def test_a_package_placed_by_hydras_tree_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="_global_ is not read"):
        _tree(tmp_path, "../config/envs@_global_")


def test_a_roll_agentic_recipe_is_refused_in_one_line() -> None:
    done = CliRunner().invoke(
        cli,
        ["review", str(FIXTURES / "qwen2.5-0.5B-agentic" / "agentic_val_sokoban.yaml")],
        catch_exceptions=False,
    )
    assert done.exit_code == 2
    assert "sets train_env_manager" in done.output and "agentic pipeline" in done.output
    assert done.output.strip().count("\n") == 0
