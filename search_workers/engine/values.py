"""Document values as the engine reads them: numbers, dates, booleans and keyword values for the
columns and filters, the text of a value for analysis and highlighting, stored bytes."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any


def to_epoch(value: Any) -> float:
    """ISO date/datetime string (or number) -> seconds since epoch (UTC). NaN if unparsable."""
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    else:
        s = str(value).strip()
        if s.endswith("Z") or s.endswith("z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return math.nan
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def to_number(value: Any, ftype: str) -> float:
    if ftype == "date":
        return to_epoch(value)
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def to_bool(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(bool(value))
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "1", "yes"):
            return 1
        if v in ("false", "0", "no"):
            return 0
    return -1


def keyword_values(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            if v is None or isinstance(v, (list, dict)):
                continue
            out.append(v if isinstance(v, str) else _scalar_str(v))
        return list(dict.fromkeys(out))
    if isinstance(value, dict):
        return []
    return [value if isinstance(value, str) else _scalar_str(value)]


def _scalar_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " \n ".join(text_of(v) for v in value)
    if isinstance(value, dict):
        return " ".join(text_of(v) for v in value.values())
    return _scalar_str(value)


def exact_bytes(data: bytes) -> bytes:
    """A copy of exactly ``len(data)`` bytes. orjson hands out its whole output buffer (4 KiB and
    up, whatever the length), so every kept ``dumps`` result would cost 4 KiB: 100k stored
    documents took 400 MB instead of 70."""
    return memoryview(data).tobytes()
