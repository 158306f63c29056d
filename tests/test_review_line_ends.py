"""Review reads a script's last line as bash does when it ends in a backslash.

verl-recipe's DAPO launches (dapo/test_dapo_8b_megatron_fp8train.sh,
test_dapo_gptoss_20b_megatron.sh and test_dapo_qwen3next_80b_megatron.sh at 48ea0a7) end their
command with `"${...[@]}" \\` and no newline after it: bash drops a backslash that ends the
input, and the reader made an empty argument of it, so review stopped with "'' is not a
key=value override".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from launch_support import bash_words

from rlmguide.review.shell import command_arguments


@pytest.mark.parametrize(
    "text",
    [
        "python3 -m m a=1 \\",
        'A=(x "y z")\npython3 -m m a=1 \\\n    "${A[@]}" \\',
        "python3 -m m a=1\\",
        "python3 -m m a=1 \\\n",
        "python3 -m m a=1 \\ \n",
    ],
)
def test_a_trailing_backslash_reads_as_bash(tmp_path: Path, text: str) -> None:
    script = tmp_path / "run.sh"
    script.write_text(text)
    words, _ = command_arguments(text, "m")
    assert words == bash_words(script, tmp_path)
