"""Every list of the OpenAPI document answers ``{"items": [...], "nextCursor": "…" | null}``
(CONTRACT §0), documented so and answered so: each one is walked page by page over HTTP.

The lists are found in the document (a GET whose answer has an ``items`` array), so a new list
route is walked too: it fails here until it answers ``nextCursor`` and takes ``limit`` and
``cursor``.
"""

from __future__ import annotations

from typing import Any

from control_plane.org.service import create_organization
from tests.factories import add_member, make_key, make_project, runtime_of, sign_in
from tests.index.helpers import create_index, make_tenant, products, wait_task

# The one answer with `items` that is not paged: an export is every synonym at once (CONTRACT §6),
# so its `nextCursor` is always null and it takes no `limit` or `cursor`.
UNPAGED = {"/v1/projects/{project_id}/indices/{index_id}/synonyms/export"}


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _list_schema(operation: dict[str, Any], components: dict[str, Any]) -> dict[str, Any] | None:
    """The answer's object with an ``items`` array (a oneOf/anyOf branch of it too), if any."""
    content = operation["responses"].get("200", {}).get("content", {}).get("application/json")
    if not content:
        return None
    schema = _resolve(content["schema"], components)
    for candidate in [schema, *(_resolve(s, components) for s in schema.get("anyOf", schema.get("oneOf", [])))]:
        if _resolve(candidate.get("properties", {}).get("items", {}), components).get("type") == "array":
            return candidate
    return None


def list_operations(openapi: dict[str, Any]) -> dict[str, dict[str, Any]]:
    components = openapi["components"]["schemas"]
    found = {}
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            schema = _list_schema(operation, components)
            if schema is not None:
                found[f"{method.upper()} {path}"] = schema | {"x-parameters": operation.get("parameters", [])}
    return found


def test_every_list_documents_next_cursor_and_takes_limit_and_cursor(client):
    lists = list_operations(client.get("/openapi.json").json())
    assert len(lists) >= 13, sorted(lists)
    for name, schema in lists.items():
        assert "nextCursor" in schema.get("required", []), f"{name}: nextCursor is not required"
        types = {branch.get("type") for branch in schema["properties"]["nextCursor"].get("anyOf", [])}
        assert types == {"string", "null"}, (name, schema["properties"]["nextCursor"])
        path = name.split(" ", 1)[1]
        query = {p["name"] for p in schema["x-parameters"] if p["in"] == "query"}
        if name.startswith("GET ") and path not in UNPAGED:
            assert {"limit", "cursor"} <= query, f"{name}: takes {sorted(query)}"


def _seed(app, client) -> tuple[dict[str, str], dict[str, str]]:
    """Two or more of everything a list shows, and the ids its path takes."""
    tenant = make_tenant(app)
    account = tenant.account
    headers = account.headers
    sign_in(app, account.user_id)  # a second session
    with runtime_of(app).sessions.begin() as db:
        create_organization(db, "Second", account.user_id)  # a second organization
    add_member(app, account, "member")
    make_project(app, account)
    make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=["https://shop.example"])
    index = create_index(client, tenant)
    create_index(client, tenant, name="second")
    url = tenant.url(index["id"])
    upload = client.post(url + "/documents", json=products(3), headers=headers)
    assert upload.status_code == 202, upload.text
    wait_task(client, headers, tenant.project_id, upload.json()["taskId"])
    for n in range(2):
        bodies = {
            "/profiles": {"name": f"profile {n}", "queryFields": {"name": {"weight": 1}}},
            "/synonyms": {"type": "multiway", "terms": [f"word{n}", f"other{n}"]},
            "/rules": {"name": f"rule {n}", "conditions": [{"pattern": f"q{n}", "anchoring": "is"}],
                       "consequence": {"hide": ["p1"]}},
            "/suggestions/custom": {"text": f"custom {n}", "weight": 1},
        }
        for suffix, body in bodies.items():
            response = client.post(url + suffix, json=body, headers=headers)
            assert response.status_code == 201, (suffix, response.text)
    ids = {"org_id": account.org_id, "project_id": tenant.project_id, "index_id": index["id"]}
    return ids, headers


def test_every_list_answers_next_cursor_on_each_page_and_null_on_the_last(app, client):
    ids, headers = _seed(app, client)
    walked = {}
    for name in list_operations(client.get("/openapi.json").json()):
        method, path = name.split(" ", 1)
        if method != "GET":
            continue
        missing = {part[1:-1] for part in path.split("/") if part.startswith("{")} - set(ids)
        assert not missing, f"{name}: this test makes no {sorted(missing)}; seed one in _seed"
        url = path.format(**ids)
        pages, cursor, seen = 0, None, []
        while True:
            params = {} if path in UNPAGED else {"limit": 1, **({"cursor": cursor} if cursor else {})}
            response = client.get(url, params=params, headers=headers)
            assert response.status_code == 200, (name, response.text)
            body = response.json()
            assert set(body) >= {"items", "nextCursor"}, (name, body)
            pages += 1
            seen += body["items"]
            cursor = body["nextCursor"]
            if cursor is None:
                break
            assert isinstance(cursor, str) and cursor and len(body["items"]) == 1, (name, body)
            assert pages < 50, name
        walked[name] = (pages, len(seen))
    for name, (pages, count) in walked.items():
        path = name.split(" ", 1)[1]
        assert count >= 2, f"{name}: seed at least two items ({count})"
        assert pages == (1 if path in UNPAGED else count), (name, pages, count)
