"""Review reads `{` and `}` inside a word as its text, as bash does.

bash takes `{` and `}` as reserved words (a group command) only where they stand alone; in
`key={a:'b'}` they are part of the word. SkyRL's gpt-oss example (examples/train/gptoss/
run_gsm8k_gptoss.sh at a956457) passes `generator.chat_template_kwargs={reasoning_effort:'low'}`;
the reader split it into `key=`, `{`, `reasoning_effort:low`, `}` and review stopped with
"'{' is not a key=value override".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from launch_support import bash_words, review_json

from rlmguide.review.shell import command_arguments

GPT_OSS = REPO / "tests" / "fixtures" / "review" / "skyrl-a956457-run_gsm8k_gptoss.sh"


@pytest.mark.parametrize(
    "text",
    [
        "python3 -m m a={b:'c'} k={} }{ x}\n",
        'f() {\n  A=1\n}\n{ B=2; }\npython3 -m m x={y:z} "{q}"\n',
        "if true; then { python3 -m m a={b} ; }; fi\n",
    ],
)
def test_braces_read_as_bash(tmp_path: Path, text: str) -> None:
    script = tmp_path / "run.sh"
    script.write_text(text)
    words, _ = command_arguments(text, "m")
    assert words == bash_words(script, tmp_path)


def test_skyrl_gpt_oss_example_is_read() -> None:
    got = review_json(GPT_OSS, "--accelerator", "h100-sxm-80gb")
    unmapped = {u["key"]: u["value"] for u in got["unmapped"]}
    assert unmapped["generator.chat_template_kwargs"] == "{reasoning_effort:low}"
    plan = got["scenario"]["plan"]
    # 2 vLLM engines of TP 4 fill the policy's 8 GPUs (colocate_all)
    assert (plan["rollout"]["gpus"], plan["rollout"]["tp"], plan["train"]["gpus"]) == (8, 4, 8)
