"""Mapping usage and ``MAPPING_BREAKS_CONFIG`` over real HTTP against a served catalog (both
backends): ``GET .../mapping/usage`` lists each profile, rule and facet setting that uses a field,
with its path; a mapping change that would break one of them answers 409 ``MAPPING_BREAKS_CONFIG``
listing every use to change first, and leaves the mapping as it was. The module removes what it
created and puts the facets back, so the shared catalog and mapping stay unchanged."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.served.conftest import Served


@dataclass
class Uses:
    profile_id: str
    rule_id: str


@pytest.fixture
def uses(served: Served) -> Iterator[Uses]:
    """A profile, a rule and a facet setting that use the catalog's fields."""
    facets_before = served.http.get(served.url("/facets")).json()
    profile = served.http.post(served.url("/profiles"), json={
        "name": "usage", "queryFields": {"name": {"weight": 1}}, "facets": ["brand"], "distinct": "model",
        "sortOptions": [{"key": "cheap", "label": "Cheapest", "sort": ["price:asc"]}]})
    assert profile.status_code == 201, profile.text
    rule = served.http.post(served.url("/rules"), json={
        "name": "usage", "conditions": [{"pattern": "usage check", "anchoring": "is"}], "filters": {"brand": ["acme"]},
        "consequence": {"hide": ["p1"]}})
    assert rule.status_code == 201, rule.text
    facets = served.http.put(served.url("/facets"), json={"facets": [{"field": "brand", "type": "terms", "label": "Brand"}]})
    assert facets.status_code == 200, facets.text
    yield Uses(profile.json()["id"], rule.json()["id"])
    assert served.http.put(served.url("/facets"), json=facets_before).status_code == 200
    assert served.http.delete(served.url(f"/rules/{rule.json()['id']}")).status_code == 204
    assert served.http.delete(served.url(f"/profiles/{profile.json()['id']}")).status_code == 204


def _usage(served: Served) -> dict[str, list[dict[str, Any]]]:
    response = served.http.get(served.url("/mapping/usage"))
    assert response.status_code == 200, response.text
    return response.json()["fields"]  # type: ignore[no-any-return]


def _of(entries: list[dict[str, Any]], kind: str, id_: str) -> list[str]:
    return [e["path"] for e in entries if e["kind"] == kind and e["id"] == id_]


def test_usage_lists_every_setting_that_uses_a_field(served: Served, uses: Uses) -> None:
    fields = _usage(served)
    assert _of(fields["name"], "profile", uses.profile_id) == ["queryFields.name"]
    assert _of(fields["brand"], "profile", uses.profile_id) == ["facets.0"]
    assert _of(fields["brand"], "rule", uses.rule_id) == ["filters.brand"]
    assert _of(fields["price"], "profile", uses.profile_id) == ["sortOptions.0.sort.0"]
    assert _of(fields["model"], "profile", uses.profile_id) == ["distinct"]
    facet = [e for e in fields["brand"] if e["kind"] == "facet"]
    assert facet == [{"kind": "facet", "id": "0", "name": "Brand", "path": "field"}]
    assert {e["name"] for e in fields["name"] if e["id"] == uses.profile_id} == {"usage"}


def test_a_mapping_change_that_breaks_a_use_is_refused(served: Served, uses: Uses) -> None:
    mapping = served.http.get(served.url("/mapping")).json()
    without = copy.deepcopy(mapping)
    del without["fields"]["brand"], without["fields"]["price"]
    refused = served.http.put(served.url("/mapping"), json=without)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "MAPPING_BREAKS_CONFIG"
    paths = {d["path"] for d in error["details"]}
    assert {"facets.0.field", f"profiles.{uses.profile_id}.facets.0",
            f"profiles.{uses.profile_id}.sortOptions.0.sort.0", f"rules.{uses.rule_id}.filters.brand"} <= paths
    assert all(d["message"] and d["kind"] in ("facet", "profile", "rule") for d in error["details"])

    unsearchable = copy.deepcopy(mapping)
    unsearchable["fields"]["name"]["searchable"] = False
    refused = served.http.put(served.url("/mapping"), json=unsearchable)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "MAPPING_BREAKS_CONFIG", refused.text
    assert f"profiles.{uses.profile_id}.queryFields.name" in {d["path"] for d in refused.json()["error"]["details"]}

    assert served.http.get(served.url("/mapping")).json() == mapping  # nothing changed
    assert sorted(served.search_ids("")) == ["p1", "p2", "p3", "p4"]


def test_usage_forgets_removed_settings(served: Served) -> None:
    profile = served.http.post(served.url("/profiles"), json={"name": "short-lived", "queryFields": {"name": {"weight": 2}}})
    assert profile.status_code == 201, profile.text
    profile_id = profile.json()["id"]
    assert _of(_usage(served)["name"], "profile", profile_id) == ["queryFields.name"]
    assert served.http.delete(served.url(f"/profiles/{profile_id}")).status_code == 204
    assert _of(_usage(served).get("name", []), "profile", profile_id) == []


def test_usage_of_an_unknown_index_is_not_found(served: Served) -> None:
    missing = served.http.get(f"/v1/projects/{served.tenant.project_id}/indices/idx_nothing/mapping/usage")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND", missing.text
