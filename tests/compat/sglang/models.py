"""A tiny model that SGLang serves with text: the tests' Qwen2 (``tests/compat/vllm/models.py``) and a word tokenizer.

The tokenizer is built in code (``tokenizers``' word level: ``w0`` ... ``w1019`` and four special
tokens, a chat template), so that ``sglang.launch_server`` answers text and chat requests with
nothing downloaded.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.compat.vllm.models import COMMON, build

SPECIAL = ["<pad>", "<s>", "</s>", "<unk>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}assistant {% endif %}"
)


def words(count: int) -> list[str]:
    """The vocabulary's words after the special tokens."""
    return [f"w{i}" for i in range(count)]


def build_served(directory: Path) -> Path:
    """The tiny Qwen2 with a tokenizer in its folder ``tokenizer`` (``--tokenizer-path``), under ``directory``.

    The tokenizer has a folder of its own: beside the model's ``config.json``, transformers would
    take Qwen2's tokenizer class, whatever the tokenizer's own configuration says.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    target = directory / "qwen2-served"
    if (target / "tokenizer" / "tokenizer.json").exists():
        return target
    model = build("qwen2", directory / "weights")
    shutil.copytree(model, target, dirs_exist_ok=True)
    vocab = {token: index for index, token in enumerate(SPECIAL + words(COMMON["vocab_size"] - len(SPECIAL)))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        chat_template=CHAT_TEMPLATE,
    )  # fmt: skip
    tokenizer.save_pretrained(str(target / "tokenizer"))
    return target
