"""Stand-ins for what a launch reads from the user's disk: a tokenizer beside the model's
config.json and a small prompt file. Run inside a framework's virtual environment (they need
its `tokenizers`, `transformers` and, for parquet, `pyarrow`); nothing is downloaded.

The tokenizer is a word-level one with a handful of words and a chat template: enough for a
framework to load it, template prompts and count their tokens; its ids stay far below any
model's vocabulary size.
"""

from __future__ import annotations

import json
from pathlib import Path

WORDS = [
    "<unk>",
    "<pad>",
    "<s>",
    "</s>",
    "user",
    "assistant",
    "system",
    ":",
    "what",
    "is",
    "one",
    "plus",
    "two",
    "?",
    "answer",
    "the",
    "three",
    "four",
]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }} : {{ message['content'] }} "
    "{% endfor %}{% if add_generation_prompt %}assistant : {% endif %}"
)
PROMPT = "what is one plus two ?"


def write_tokenizer(folder: Path) -> None:
    """A fast tokenizer saved as transformers saves one (tokenizer.json and its config)."""
    if (folder / "tokenizer.json").is_file():
        return
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(WORDS)}
    inner = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    inner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=inner,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        chat_template=CHAT_TEMPLATE,
    )
    tokenizer.save_pretrained(str(folder))
    config = json.loads((folder / "config.json").read_text())
    generation = {"bos_token_id": 2, "eos_token_id": 3, "pad_token_id": 1}
    config.update(generation)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(generation, indent=2))


def prompt_rows(count: int) -> list[dict]:
    """Prompts in the chat form verl's RLHFDataset and NeMo-RL's math data read."""
    return [
        {
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": PROMPT}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": "three"},
            "extra_info": {"index": i, "split": "train"},
        }
        for i in range(count)
    ]


def write_parquet(path: Path, count: int) -> None:
    if path.is_file():
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(prompt_rows(count)), str(path))
