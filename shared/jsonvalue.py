"""JSON values the service can store and encode: JSON allows integers of any size and any nesting,
and Python's parser also reads NaN and Infinity (which JSON does not have); orjson (the stored form,
the engine's, every answer) takes integers within 64 bits and 255 levels of containers, and writes
NaN and Infinity as null.

Every number of a request lies within the 64-bit integer range, integer or not: JSON Schema (the
OpenAPI document) counts ``1e30`` as an integer, so the one bound it can state holds for both."""

from __future__ import annotations

import math
from typing import Any

INT64 = (-(2**63), 2**63 - 1)


def json_problem(value: Any, max_depth: int, path: str = "") -> dict[str, str] | None:
    """The first ``{path, message}`` of a JSON value nested deeper than ``max_depth`` containers or
    holding an integer outside 64 bits or a NaN or an infinity (:func:`scalar_problem`), or None. Iterative: a body nested a thousand levels must not exhaust the stack. Every
    upload walks each value twice (the body, then each document): paths are only spelled out for
    a problem, from the keys of the open containers."""
    if not isinstance(value, list | dict):
        message = scalar_problem(value)
        return None if message is None else {"path": path, "message": message}
    if max_depth < 1:
        return {"path": path, "message": f"nested deeper than {max_depth} levels"}
    # one frame per open container: its (key, value) iterator and the key it sits under
    frames: list[tuple[Any, Any]] = [(_items(value), None)]
    while frames:
        for key, v in frames[-1][0]:
            kind = type(v)
            if kind is int or kind is float:
                message = scalar_problem(v)
                if message is not None:
                    return {"path": _path(path, frames, key), "message": message}
            elif isinstance(v, list | dict):
                if len(frames) >= max_depth:
                    return {"path": _path(path, frames, key), "message": f"nested deeper than {max_depth} levels"}
                frames.append((_items(v), key))
                break
        else:
            frames.pop()
    return None


def scalar_problem(value: Any) -> str | None:
    """Why a number cannot be taken as sent (outside the 64-bit integer range, NaN, an infinity), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if INT64[0] <= value <= INT64[1] else "integer out of range"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "not a finite number (JSON has no NaN or Infinity)"
        if not INT64[0] <= value <= INT64[1]:
            return "number out of range"
    return None


def _items(container: list | dict) -> Any:
    return enumerate(container) if isinstance(container, list) else iter(container.items())


def _path(root: str, frames: list[tuple[Any, Any]], key: Any) -> str:
    """``root`` followed by the keys leading to ``key``: ``[i]`` for list items, ``.name`` for members."""
    at = root
    keys = [k for _, k in frames[1:]] + [key]
    for (it, _), k in zip(frames, keys, strict=True):
        at = f"{at}[{k}]" if isinstance(it, enumerate) else f"{at}.{k}" if at else str(k)
    return at
