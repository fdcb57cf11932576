"""The built-in embedding models: WordLlama (``wordllama`` ships its 16 MB of weights and its tokenizer
inside its wheel; inference is a token-embedding lookup, pooling and a projection in numpy).

Measured on the Best Buy catalog (name, categories and description of 3,291 products) on this
2-core machine: ~5,000 documents/s at 256 dimensions, ~7,000/s at 128; a shopper's query in
0.06 ms. The 128-dimension model (the first 128 dimensions of the 256 one, trained matryoshka
style) found the same paraphrases as the 256 one in our probe and halves the memory and the
search cost, so it is the default. See docs/semantic-search.md.

The weights are loaded once per process, on first use, under a lock; never downloads (the package's own
loader looks for the tokenizer in a folder its wheel does not use, then goes to the network).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import safe_open
from tokenizers import Tokenizer

from shared.semantic import DEFAULT_MODEL, MODELS

from .errors import EngineError

# wordllama calls logging.basicConfig(level=INFO) when imported: every process would print every
# library's INFO lines (alembic's on each CLI command). What it set on the root logger is undone.
_ROOT = logging.getLogger()
_ROOT_STATE = (list(_ROOT.handlers), _ROOT.level)
import wordllama  # noqa: E402
from wordllama.inference import WordLlamaInference  # noqa: E402

_ROOT.handlers[:] = _ROOT_STATE[0]
_ROOT.setLevel(_ROOT_STATE[1])

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}
#: characters of a document's text a built-in vector reads (the model averages tokens: a long
#: description adds little past this and costs time)
MAX_TEXT = 2000


def _load(model: str) -> Any:
    root = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), framework="np", device="cpu") as fh:
        weights = fh.get_tensor("embedding.weight")[:, : MODELS[model]]
    return WordLlamaInference(np.ascontiguousarray(weights), tokenizer)


def model_of(name: str | None) -> Any:
    name = name or DEFAULT_MODEL
    found = _LOADED.get(name)
    if found is None:
        if name not in MODELS:
            raise EngineError(f"unknown model {name!r}", "MAPPING_INVALID", [{"path": "embed.model", "message": "unknown model"}])
        with _LOCK:
            found = _LOADED.get(name)
            if found is None:
                found = _LOADED[name] = _load(name)
    return found


def embed(model: str | None, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors (float32, one row per text; a text without words gives a row of zeros)."""
    if not texts:
        return np.zeros((0, MODELS[model or DEFAULT_MODEL]), np.float32)
    out = model_of(model).embed([t[:MAX_TEXT] for t in texts], norm=True)
    out = np.asarray(out, dtype=np.float32)
    out[~np.isfinite(out).all(axis=1)] = 0.0
    return out


@functools.lru_cache(maxsize=4096)
def embed_query(model: str | None, text: str) -> np.ndarray:
    """A search's text as a unit vector (read-only), kept for the process's next shards and searches:
    every shard of a search in one process asks for the same text."""
    vector = embed(model, [text])[0]
    vector.flags.writeable = False
    return vector
