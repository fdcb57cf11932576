"""Synonym routes (spec 4.6): CRUD, import and export, bad input, quotas, tenancy."""

from __future__ import annotations

import pytest

from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_index, make_tenant


@pytest.fixture(scope="module")
def shop(app):
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_index(client, tenant)
    return tenant, index["id"]


def url(shop, suffix: str = "") -> str:
    tenant, index_id = shop
    return tenant.url(index_id, "/synonyms" + suffix)


def test_create_read_update_delete(client, shop):
    tenant, _ = shop
    created = client.post(url(shop), json={"type": "multiway", "terms": ["cell phone", " cellphone ", "mobile"]},
                          headers=tenant.headers)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"].startswith("syn_") and body["terms"] == ["cell phone", "cellphone", "mobile"]
    assert body["enabled"] is True and "input" not in body
    one = client.get(url(shop, f"/{body['id']}"), headers=tenant.read_headers)
    assert one.status_code == 200 and one.json()["terms"] == body["terms"]
    changed = client.put(url(shop, f"/{body['id']}"), headers=tenant.headers,
                         json={"type": "oneway", "input": "laptop", "synonyms": ["notebook"], "enabled": False})
    assert changed.status_code == 200, changed.text
    assert changed.json()["input"] == "laptop" and changed.json()["synonyms"] == ["notebook"]
    assert "terms" not in changed.json() and changed.json()["enabled"] is False
    listed = client.get(url(shop), headers=tenant.read_headers).json()
    assert body["id"] in [s["id"] for s in listed["items"]]
    assert client.delete(url(shop, f"/{body['id']}"), headers=tenant.headers).status_code == 204
    assert client.get(url(shop, f"/{body['id']}"), headers=tenant.headers).json()["error"]["code"] == "NOT_FOUND"
    assert client.delete(url(shop, f"/{body['id']}"), headers=tenant.headers).status_code == 404


@pytest.mark.parametrize("payload, path", [
    ({"type": "multiway", "terms": ["tv"]}, "terms"),
    ({"type": "multiway", "terms": ["tv", "TV"]}, "terms"),
    ({"type": "multiway", "terms": ["tv", ""]}, "terms[1]"),
    ({"type": "multiway", "terms": ["tv", "!!!"]}, "terms[1]"),
    ({"type": "multiway", "terms": ["tv", "x" * 101]}, "terms[1]"),
    ({"type": "multiway"}, "terms"),
    ({"type": "oneway", "synonyms": ["x"]}, "input"),
    ({"type": "oneway", "input": "tv", "synonyms": []}, "synonyms"),
    ({"type": "oneway", "input": "phone", "synonyms": ["Phones"]}, "synonyms"),
    ({"type": "oneway", "input": "tv", "synonyms": ["x"], "terms": ["a", "b"]}, "terms"),
])
def test_invalid_entries_are_refused_with_the_path(client, shop, payload, path):
    tenant, _ = shop
    response = client.post(url(shop), json=payload, headers=tenant.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert path in [d["path"] for d in error["details"]]


def test_wrong_types_and_unknown_type(client, shop):
    tenant, _ = shop
    for payload in ({"type": "twoway", "terms": ["a", "b"]}, {"type": "multiway", "terms": "a, b"}, []):
        response = client.post(url(shop), json=payload, headers=tenant.headers)
        assert response.status_code == 400 and response.json()["error"]["code"] == "VALIDATION_ERROR"


def fresh(app, client):
    """A tenant of its own with one empty index (the free plan holds 3 indices per project)."""
    tenant = make_tenant(app)
    return tenant, create_index(client, tenant)


def test_import_json_and_solr_append_and_replace_then_export(app, client):
    tenant, fresh_index = fresh(app, client)
    base = tenant.url(fresh_index["id"], "/synonyms")
    items = [{"type": "multiway", "terms": ["tv", "television"]},
             {"type": "oneway", "input": "laptop", "synonyms": ["notebook"], "enabled": False}]
    response = client.post(base + "/import", json={"items": items, "mode": "append"}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"imported": 2, "total": 2, "mode": "append"}
    solr_text = "cell phone, cellphone, mobile\nipod => mp3 player\n"
    response = client.post(base + "/import", json={"solr": solr_text}, headers=tenant.headers)
    assert response.json() == {"imported": 2, "total": 4, "mode": "append"}
    exported = client.get(base + "/export", headers=tenant.read_headers).json()["items"]
    assert len(exported) == 4
    solr_out = client.get(base + "/export?format=solr", headers=tenant.read_headers).json()["solr"]
    assert "cell phone, cellphone, mobile\n" in solr_out and "ipod => mp3 player\n" in solr_out
    assert "# disabled: laptop => notebook\n" in solr_out
    # an export imports again as it was (ids and timestamps are accepted and ignored)
    response = client.post(base + "/import", json={"items": exported, "mode": "replace"}, headers=tenant.headers)
    assert response.json() == {"imported": 4, "total": 4, "mode": "replace"}
    again = client.get(base + "/export", headers=tenant.read_headers).json()["items"]
    strip = [{k: v for k, v in s.items() if k not in ("id", "createdAt", "updatedAt")} for s in again]
    assert sorted(map(str, strip)) == sorted(
        map(str, [{k: v for k, v in s.items() if k not in ("id", "createdAt", "updatedAt")} for s in exported]))


def test_imports_are_all_or_nothing(app, client):
    tenant, fresh_index = fresh(app, client)
    base = tenant.url(fresh_index["id"], "/synonyms")
    assert client.post(base + "/import", json={"solr": "a, b\n"}, headers=tenant.headers).status_code == 200
    bad_solr = client.post(base + "/import", json={"solr": "x, y\nz => \n", "mode": "replace"}, headers=tenant.headers)
    assert bad_solr.status_code == 400
    error = bad_solr.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["line"] == 2
    bad_items = client.post(base + "/import", headers=tenant.headers,
                            json={"items": [{"type": "multiway", "terms": ["p", "q"]}, {"type": "oneway"}]})
    assert bad_items.status_code == 400
    assert {d["path"] for d in bad_items.json()["error"]["details"]} >= {"items[1].input"}
    neither = client.post(base + "/import", json={"mode": "append"}, headers=tenant.headers)
    assert neither.status_code == 400
    both = client.post(base + "/import", json={"items": [], "solr": ""}, headers=tenant.headers)
    assert both.status_code == 400
    exported = client.get(base + "/export?format=solr", headers=tenant.headers).json()["solr"]
    assert exported == "a, b\n"  # nothing of the refused imports landed, nothing replaced


def test_more_synonyms_than_the_plan_allows(app, client):
    tenant, fresh_index = fresh(app, client)
    base = tenant.url(fresh_index["id"], "/synonyms")
    lines = "".join(f"w{i}a, w{i}b\n" for i in range(501))  # the free plan holds 500
    response = client.post(base + "/import", json={"solr": lines}, headers=tenant.headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "QUOTA_EXCEEDED"
    assert client.get(base + "/export", headers=tenant.headers).json()["items"] == []
    fits = "".join(f"w{i}a, w{i}b\n" for i in range(500))
    assert client.post(base + "/import", json={"solr": fits}, headers=tenant.headers).status_code == 200
    one_more = client.post(base, json={"type": "multiway", "terms": ["x", "y"]}, headers=tenant.headers)
    assert one_more.status_code == 403 and one_more.json()["error"]["code"] == "QUOTA_EXCEEDED"
    replaced = client.post(base + "/import", json={"solr": "x, y\n", "mode": "replace"}, headers=tenant.headers)
    assert replaced.json()["total"] == 1


def test_read_keys_cannot_write(client, shop):
    tenant, _ = shop
    response = client.post(url(shop), json={"type": "multiway", "terms": ["a", "b"]}, headers=tenant.read_headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"


def test_other_tenants_synonyms_are_not_found(app, client, shop):
    tenant, index_id = shop
    created = client.post(url(shop), json={"type": "multiway", "terms": ["sofa", "couch"]}, headers=tenant.headers)
    synonym_id = created.json()["id"]
    other = make_tenant(app)
    other_index = create_index(client, other)
    for path in (f"/synonyms/{synonym_id}",):
        theirs = other.url(other_index["id"], path)
        assert client.get(theirs, headers=other.headers).status_code == 404
        assert client.put(theirs, json={"type": "multiway", "terms": ["a", "b"]},
                          headers=other.headers).status_code == 404
        assert client.delete(theirs, headers=other.headers).status_code == 404
    # their key on our index: our index does not exist for them
    ours = tenant.url(index_id, "/synonyms")
    assert client.get(ours.replace(tenant.project_id, other.project_id), headers=other.headers).status_code == 404
    mine = client.get(ours, headers=other.headers)  # a project not theirs is one that does not exist for them
    assert (mine.status_code, mine.json()["error"]["code"]) == (404, "NOT_FOUND"), mine.text
    assert client.get(url(shop, f"/{synonym_id}"), headers=tenant.headers).status_code == 200


@pytest.fixture
def checks(monkeypatch):
    """How many entries an import checked (the work a refused import must not do)."""
    from control_plane.synonym import service

    calls = []
    checked = service.check_entry

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return checked(*args, **kwargs)

    monkeypatch.setattr(service, "check_entry", counting)
    return calls


def test_imports_bound_their_work_before_doing_it(app, client, checks):
    """A 2 MB Solr line of a million terms took 20 s of CPU before a 403; a line of 51 terms answered
    500. Sizes and counts are checked while reading, the plan's room before any entry is checked."""
    tenant, fresh_index = fresh(app, client)
    base = tenant.url(fresh_index["id"], "/synonyms/import")
    huge = ",".join(f"t{i}" for i in range(1_000_000))[:1_999_000]
    response = client.post(base, json={"solr": "a, b\n" + huge}, headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["details"][0]["line"] == 2 and checks == []
    wide = ", ".join(f"w{i}" for i in range(51))
    response = client.post(base, json={"solr": f"x, y\n{wide}\n"}, headers=tenant.headers)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["line"] == 2, response.text
    long_term = client.post(base, json={"solr": "a, " + "b" * 101}, headers=tenant.headers)
    assert long_term.status_code == 400 and long_term.json()["error"]["details"][0]["line"] == 1
    items = [{"type": "multiway", "terms": [f"t{i}-{j}" for j in range(20)]} for i in range(20_000)]
    response = client.post(base, json={"items": items}, headers=tenant.headers)  # the free plan holds 500
    assert response.status_code == 403 and response.json()["error"]["code"] == "QUOTA_EXCEEDED"
    many = "".join(f"m{i}, n{i}\n" for i in range(5_000))
    response = client.post(base, json={"solr": many}, headers=tenant.headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "QUOTA_EXCEEDED"
    assert checks == []  # nothing of the refused imports was checked entry by entry
    assert client.get(tenant.url(fresh_index["id"], "/synonyms/export"), headers=tenant.headers).json()["items"] == []


def test_an_import_holds_at_most_its_terms_in_all(app, client, checks):
    tenant, fresh_index = fresh(app, client)
    with app.state.runtime.sessions.begin() as db:
        from control_plane.org.models import Organization

        db.get(Organization, tenant.account.org_id).plan = "enterprise"
    base = tenant.url(fresh_index["id"], "/synonyms/import")
    items = [{"type": "multiway", "terms": [f"t{i}-{j}" for j in range(11)]} for i in range(20_000)]
    response = client.post(base, json={"items": items}, headers=tenant.headers)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["path"] == "items"
    text = "".join(",".join(f"{i}t{j}" for j in range(11)) + "\n" for i in range(19_000))  # < 2 MB
    response = client.post(base, json={"solr": text}, headers=tenant.headers)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["line"] > 18_000
    assert checks == []
