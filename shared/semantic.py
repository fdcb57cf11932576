"""Vector fields (CONTRACT §10), for the engine that indexes them and the control plane that checks
documents, profiles and searches against them.

A vector field is either *shop-supplied* (``{type: "vector", dimensions: N}``: each document carries
N finite numbers, or nothing) or *built in* (``{type: "vector", embed: {from: [FIELD, ...], model?}}``:
the engine computes it from the named fields when documents are applied to a shard, with a model that
ships inside a Python package, so nothing is downloaded at run time).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

#: the built-in models and the dimensions of their vectors (``search_workers/engine/embedding.py``)
MODELS: dict[str, int] = {"wordllama-128": 128, "wordllama-256": 256}
DEFAULT_MODEL = "wordllama-128"
MAX_DIMENSIONS = 2048
MAX_EMBED_FROM = 10


def is_vector(spec: Any) -> bool:
    return isinstance(spec, dict) and spec.get("type") == "vector"


def dimensions_of(spec: dict[str, Any]) -> int:
    """The length of a vector field's vectors: its ``dimensions``, or its model's."""
    embed = spec.get("embed")
    if isinstance(embed, dict):
        return MODELS[embed.get("model") or DEFAULT_MODEL]
    return int(spec["dimensions"])


def is_builtin(spec: dict[str, Any]) -> bool:
    return isinstance(spec.get("embed"), dict)


def vector_spec_faults(spec: dict[str, Any], base: str) -> list[dict[str, str]]:
    """What is wrong with a vector field's definition (``dimensions`` xor ``embed``)."""
    out: list[dict[str, str]] = []
    dims, embed = spec.get("dimensions"), spec.get("embed")
    if (dims is None) == (embed is None):
        return [{"path": base, "message": "a vector field has dimensions (shop-supplied vectors) or embed "
                                          "(computed from other fields), not both"}]
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= MAX_DIMENSIONS):
        out.append({"path": f"{base}.dimensions", "message": f"an integer from 1 to {MAX_DIMENSIONS}"})
    if embed is not None:
        if not isinstance(embed, dict):
            return [{"path": f"{base}.embed", "message": "must be an object {from: [FIELD, ...], model?}"}]
        for key in embed:
            if key not in ("from", "model"):
                out.append({"path": f"{base}.embed.{key}", "message": "unknown embed setting"})
        sources = embed.get("from")
        if (not isinstance(sources, list) or not 1 <= len(sources) <= MAX_EMBED_FROM
                or not all(isinstance(s, str) and s for s in sources)):
            out.append({"path": f"{base}.embed.from", "message": f"1 to {MAX_EMBED_FROM} field names"})
        model = embed.get("model")
        if model is not None and model not in MODELS:
            out.append({"path": f"{base}.embed.model", "message": f"one of {', '.join(MODELS)}"})
    for flag in ("searchable", "filterable", "facetable", "sortable", "suggest"):
        if spec.get(flag):
            out.append({"path": f"{base}.{flag}", "message": f"a vector field cannot be {flag}; "
                                                             "a profile's semantic setting searches it"})
    if spec.get("analyzer") is not None:
        out.append({"path": f"{base}.analyzer", "message": "a vector field has no analyzer"})
    return out


def vector_value_fault(value: Any, dims: int) -> str | None:
    """Why ``value`` is no vector of ``dims`` finite numbers (None: it is one)."""
    if not isinstance(value, list):
        return f"expected a list of {dims} numbers"
    if len(value) != dims:
        return f"expected {dims} numbers, got {len(value)}"
    for x in value:
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            return f"expected {dims} finite numbers"
    return None


def vector_json_schema() -> dict[str, Any]:
    """The mapping field settings a vector field adds (``mapping_json_schema``)."""
    return {
        "dimensions": {"type": "integer", "minimum": 1, "maximum": MAX_DIMENSIONS,
                       "description": "A vector field's length: documents carry their own vectors"},
        "embed": {
            "type": "object",
            "additionalProperties": False,
            "required": ["from"],
            "description": "A vector field computed from other fields by a built-in model",
            "properties": {
                "from": {"type": "array", "minItems": 1, "maxItems": MAX_EMBED_FROM,
                         "items": {"type": "string", "minLength": 1}},
                "model": {"enum": list(MODELS), "default": DEFAULT_MODEL},
            },
        },
    }


def _words(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, list):
        for item in value:
            yield from _words(item)


def embed_text(doc: dict[str, Any], sources: Sequence[str]) -> str:
    """The text a built-in vector embeds: the ``sources`` fields' strings (and numbers) in order."""
    return ". ".join(part for name in sources for part in _words(doc.get(name)) if part.strip())


def vector_field_fault(spec: dict[str, Any], value: Any) -> str | None:
    """A document's value for a vector field (None: fine)."""
    if is_builtin(spec):
        return f"computed from {', '.join(spec['embed'].get('from') or [])}: leave it out"
    return vector_value_fault(value, dimensions_of(spec))
