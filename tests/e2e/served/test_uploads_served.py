"""Upload validation over real HTTP against a served catalog (both backends): a batch with one bad
document is refused whole with the document's path, a malformed body is a 400, and nothing of a
refused batch reaches search."""

from __future__ import annotations

from tests.e2e.served.conftest import CATALOG, Served


def test_a_refused_batch_names_the_bad_document_and_stores_nothing(served: Served) -> None:
    batch = [{"id": "n1", "name": "velvet armchair", "brand": "acme", "price": 120.0},
             {"id": "n2", "name": "velvet footstool", "brand": "acme", "price": "12 EUR"}]
    refused = served.http.post(served.url("/documents"), json=batch)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"] == [{"path": "[1].price", "message": "expected a number"}]

    malformed = served.http.post(served.url("/documents"), content=b"[{", headers={"Content-Type": "application/json"})
    assert (malformed.status_code, malformed.json()["error"]["code"]) == (400, "VALIDATION_ERROR")

    assert served.search_ids("velvet") == []  # n1 was not stored either
    index = served.http.get(served.url())
    assert index.status_code == 200 and index.json()["documentCount"] == len(CATALOG), index.text
