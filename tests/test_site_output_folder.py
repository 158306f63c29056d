"""`site build --out DIR` never deletes files it did not write (MkDocs empties its output)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlmguide.cli import cli
from rlmguide.sitegen.sitebuild import SENTINEL, OutputFolderError, claim_output_folder


def _mine(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    notes = folder / "notes.txt"
    notes.write_text("keep\n")
    return notes


def test_a_folder_with_user_files_is_refused_and_kept(tmp_path: Path) -> None:
    notes = _mine(tmp_path / "mine")
    result = CliRunner().invoke(cli, ["site", "build", "--out", str(tmp_path / "mine")])
    assert result.exit_code == 2, result.output
    assert "did not write" in result.output
    assert notes.read_text() == "keep\n"
    assert not (tmp_path / "mine" / SENTINEL).exists()


def test_the_current_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes = _mine(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["site", "build", "--out", "."])
    assert result.exit_code == 2
    assert notes.read_text() == "keep\n"


def test_a_symlink_to_a_user_folder_is_refused(tmp_path: Path) -> None:
    notes = _mine(tmp_path / "home")
    (tmp_path / "link").symlink_to(tmp_path / "home", target_is_directory=True)
    with pytest.raises(OutputFolderError, match="did not write"):
        claim_output_folder(tmp_path / "link")
    assert notes.read_text() == "keep\n"


def test_a_file_and_the_project_are_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputFolderError, match="not a folder"):
        claim_output_folder(tmp_path / "f")
    repo = Path(__file__).resolve().parent.parent
    for folder in (repo, repo / "site", repo / "site" / "docs"):
        with pytest.raises(OutputFolderError, match="project or its site sources"):
            claim_output_folder(folder)


def test_new_empty_and_marked_folders_are_taken(tmp_path: Path) -> None:
    new = claim_output_folder(tmp_path / "a" / "b")
    assert (new / SENTINEL).is_file()
    (tmp_path / "empty").mkdir()
    assert claim_output_folder(tmp_path / "empty") == (tmp_path / "empty").resolve()
    (new / "index.html").write_text("an earlier build")
    assert claim_output_folder(new) == new  # marked: an earlier build, replaced


def test_refusal_as_a_process_is_one_line(tmp_path: Path) -> None:
    notes = _mine(tmp_path / "mine")
    env = {**os.environ, "RLMGUIDE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "rlmguide", "site", "build", "--out", str(tmp_path / "mine")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert notes.read_text() == "keep\n"
