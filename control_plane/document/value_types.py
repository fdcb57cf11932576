"""Which JSON values fit which mapping field type (CONTRACT §3): what an upload is checked against,
and what a dynamic index's inference reports as a conflict."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from shared.geo import POINT_WORDS, point_of


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: Any) -> bool:
    if _is_number(value):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
        return True
    except ValueError:
        pass
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False


def type_matches(field_type: str, value: Any) -> bool:
    if field_type == "text":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if field_type == "keyword":
        return isinstance(value, str) or (_is_number(value) and not isinstance(value, float))
    if field_type == "keyword[]":
        if isinstance(value, str):
            return True
        return isinstance(value, list) and all(isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value)
    if field_type == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if field_type == "float":
        return _is_number(value)
    if field_type == "boolean":
        return isinstance(value, bool)
    if field_type == "date":
        return _is_date(value)
    if field_type == "geopoint":
        return point_of(value) is not None
    return True


TYPE_NAMES = {
    "text": "a string",
    "keyword": "a string",
    "keyword[]": "an array of strings",
    "integer": "an integer",
    "float": "a number",
    "boolean": "a boolean",
    "date": "an ISO 8601 date or a timestamp",
    "geopoint": POINT_WORDS,
}




def expected(field_type: str) -> str:
    """What a value of ``field_type`` is, in words ("a number")."""
    return TYPE_NAMES.get(field_type, field_type)
