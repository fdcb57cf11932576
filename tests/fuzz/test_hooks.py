"""The fuzz's own check (tests/fuzz/hooks.py): a 400 to a schema-valid request passes only when each
detail names an input the operation lists beyond its schema."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.fuzz.hooks import UndocumentedRejection, input_of, rejections_are_documented


def _case(rules: dict[str, str] | None, positive: bool = True) -> SimpleNamespace:
    answer = {"description": "bad"} | ({"x-checked-beyond-schema": rules} if rules is not None else {})
    meta = SimpleNamespace(generation=SimpleNamespace(mode=SimpleNamespace(is_positive=positive)),
                           phase=SimpleNamespace(data=None))
    operation = SimpleNamespace(definition=SimpleNamespace(raw={"responses": {"400": answer}}), label="GET /x")
    return SimpleNamespace(meta=meta, _meta=meta, operation=operation)


def _answer(*paths: str, status: int = 400) -> SimpleNamespace:
    body = {"error": {"code": "VALIDATION_ERROR", "message": "no", "details": [{"path": p, "message": "no"}
                                                                             for p in paths]}}
    return SimpleNamespace(status_code=status, content=json.dumps(body).encode())


def test_a_listed_input_passes_and_another_fails():
    case = _case({"cursor": "a cursor of this list", "[]": "documents"})
    assert rejections_are_documented(None, _answer("cursor"), case) is None
    assert rejections_are_documented(None, _answer("[3].price", "cursor"), case) is None
    with pytest.raises(UndocumentedRejection):
        rejections_are_documented(None, _answer("cursor", "limit"), case)
    with pytest.raises(UndocumentedRejection):
        rejections_are_documented(None, _answer(), case)  # a 400 naming nothing


def test_only_a_400_to_valid_data_of_an_operation_with_rules_is_judged():
    assert rejections_are_documented(None, _answer("limit"), _case({"cursor": "x"}, positive=False)) is None
    assert rejections_are_documented(None, _answer("limit", status=404), _case({"cursor": "x"})) is None
    assert rejections_are_documented(None, _answer("limit"), _case(None)) is None  # schemathesis' own check


@pytest.mark.parametrize(("path", "name"), [("filters.brand", "filters"), ("[3].price", "[]"), ("ids.0", "ids"),
                                            ("items[2].terms", "items"), ("cursor", "cursor"), ("", "")])
def test_the_input_a_path_names(path, name):
    assert input_of(path) == name
