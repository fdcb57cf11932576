"""The OpenAPI document and the offline /docs: security schemes, error bodies, no CDN."""

from __future__ import annotations

import re

CDN = re.compile(r"(?:src|href)\s*=\s*[\"']?(https?:)?//", re.IGNORECASE)


def test_docs_use_only_local_assets(client):
    for page in ("/docs", "/redoc"):
        response = client.get(page)
        assert response.status_code == 200
        assert not CDN.search(response.text), f"{page} loads from another host"
        assets = re.findall(r"(?:src|href|spec-url)\s*=\s*[\"']?([^\"'> ]+)", response.text)
        assets += re.findall(r"url:\s*'([^']+)'", response.text)
        assert assets
        for asset in assets:
            assert asset.startswith("/"), asset
            assert client.get(asset).status_code == 200, asset


def test_security_schemes_and_per_route_credentials(client):
    schema = client.get("/openapi.json").json()
    schemes = schema["components"]["securitySchemes"]
    assert {name: (s["type"], s["scheme"]) for name, s in schemes.items()} == {
        "sessionToken": ("http", "bearer"),
        "secretKey": ("http", "bearer"),
        "publicKey": ("http", "bearer"),
    }
    paths = schema["paths"]
    assert paths["/v1/search/{profile_key}"]["post"]["security"] == [{"publicKey": []}, {"secretKey": []}]
    assert paths["/v1/projects/{project_id}/api-keys"]["post"]["security"] == [{"sessionToken": []}]
    assert paths["/v1/orgs/{org_id}"]["get"]["security"] == [{"sessionToken": []}]
    index_routes = paths["/v1/projects/{project_id}/indices/{index_id}"]
    assert index_routes["get"]["security"] == [{"sessionToken": []}, {"secretKey": []}]
    assert paths["/v1/projects/{project_id}/indices/{index_id}/integration"]["put"]["security"] == [{"secretKey": []}]
    assert "security" not in paths["/v1/auth/login"]["post"]


def test_every_error_answer_has_the_error_body(client):
    schema = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "422" not in responses, (method, path)
            if operation.get("security"):
                assert {"401", "403"} <= set(responses), (method, path)
            if "{" in path:
                assert "404" in responses, (method, path)
            if path not in ("/health", "/ready"):
                assert "503" in responses, (method, path)
            for status, response in responses.items():
                if status.startswith(("4", "5")) and path != "/ready":
                    ref = response["content"]["application/json"]["schema"].get("$ref", "")
                    assert ref.endswith("/Error") or ref.endswith("/ErrorBody"), (method, path, status)
                if status == "204":
                    assert "content" not in response, (method, path)


def test_the_documented_answers_of_async_and_probe_routes(client):
    paths = client.get("/openapi.json").json()["paths"]
    mapping = paths["/v1/projects/{project_id}/indices/{index_id}/mapping"]["put"]["responses"]
    assert mapping["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/TaskAccepted")
    ready = paths["/ready"]["get"]["responses"]
    assert ready["503"]["content"]["application/json"]["schema"]["$ref"].endswith("/Probe")
    search = paths["/v1/search/{profile_key}"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"hits", "total", "facets", "queryId"} <= set(search["required"])


# --------------------------------------------------------------------------- the document states every bound
INT64 = (-(2**63), 2**63 - 1)


def _schemas(node, where=""):
    """Every (location, schema) of the document that gives a JSON type."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str | list):
            yield where, node
        for key, value in node.items():
            if not key.startswith("x-"):
                yield from _schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _schemas(value, f"{where}/{i}")


def test_every_number_is_bounded_within_64_bits(client):
    """A body's numbers are refused outside the 64-bit integer range (control_plane.wire), so the
    document bounds every integer and number: a generated client never sends one it would refuse."""
    document = client.get("/openapi.json").json()
    checked = 0
    for where, schema in _schemas(document):
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not {"integer", "number"} & set(kinds):
            continue
        checked += 1
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        assert low is not None and high is not None, where
        assert INT64[0] <= low and high <= INT64[1], where
        if "integer" in kinds:
            assert schema.get("format") == "int64", where
    assert checked > 100


def test_no_schema_takes_just_anything(client):
    """Free-form JSON (documents, userData) is a JsonValue: any JSON, numbers within 64 bits."""
    document = client.get("/openapi.json").json()
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("additionalProperties") is True:
                found.append(where)
            for key, value in node.items():
                if key in ("items", "additionalProperties", "schema") and value == {}:
                    found.append(f"{where}/{key}")
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(document, "")
    assert found == []
    value = document["components"]["schemas"]["JsonValue"]
    number = next(branch for branch in value["anyOf"] if branch.get("type") == "number")
    assert (number["minimum"], number["maximum"]) == INT64


def test_search_limits_are_stated(client):
    from shared import limits

    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("SearchRequest", "StorefrontSearchRequest"):
        body = schemas[name]["properties"]
        assert body["q"]["maxLength"] == limits.MAX_QUERY_CHARS
        assert (body["page"]["minimum"], body["page"]["maximum"]) == (1, limits.MAX_RESULT_WINDOW)
        per_page = next(b for b in body["perPage"]["anyOf"] if b.get("type") == "integer")
        # CONTRACT: perPage 0 asks for facets and total only
        assert (per_page["minimum"], per_page["maximum"]) == (0, 100)
        assert body["facets"]["maxItems"] == limits.MAX_FACETS and body["facets"]["uniqueItems"] is True
        assert body["filters"]["anyOf"][0] == {"$ref": "#/components/schemas/Filter"}
    assert "profileKey" not in schemas["StorefrontSearchRequest"]["properties"]
    assert schemas["StorefrontSearchRequest"]["additionalProperties"] is False
    assert schemas["Filter"]["maxProperties"] == limits.MAX_FILTER_CLAUSES
    assert schemas["Filter"]["properties"]["and"]["maxItems"] == limits.MAX_FILTER_VALUES
    value = next(b for b in schemas["FilterValue"]["anyOf"] if b["type"] == "string")
    assert value["maxLength"] == limits.MAX_FILTER_VALUE_CHARS
    assert set(schemas["FilterRange"]["properties"]) == set(limits.RANGE_OPS)


def test_bare_arrays_state_their_items_and_size(client):
    paths = client.get("/openapi.json").json()["paths"]
    index = "/v1/projects/{project_id}/indices/{index_id}"
    for path in (f"{index}/documents", f"{index}/replace-sessions/{{session_id}}/documents",
                 f"{index}/documents/delete"):
        operation = paths[path]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body["type"] == "array" and body["maxItems"] == 1000, path
        assert "413" in operation["responses"], path
    documents = paths[f"{index}/documents"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert documents["items"]["type"] == "object"
    ids = paths[f"{index}/documents/delete"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert [branch["type"] for branch in ids["items"]["anyOf"]] == ["string", "integer"]


def test_rules_beyond_the_schema_are_listed_with_the_400(client):
    """What JSON Schema cannot say (a field of the mapping, an issued token) is listed per operation;
    the fuzz test (tests/fuzz/hooks.py) holds every 400 of a schema-valid request to that list."""
    from control_plane.openapi_checks import CHECKED_BEYOND_SCHEMA

    paths = client.get("/openapi.json").json()["paths"]
    for name, rules in CHECKED_BEYOND_SCHEMA.items():
        method, path = name.split(" ", 1)
        assert path in paths and method.lower() in paths[path], f"{name} is no operation of the document"
        bad_request = paths[path][method.lower()]["responses"]["400"]
        assert bad_request["x-checked-beyond-schema"] == rules and rules, name
        for input_name in rules:
            assert f"`{input_name}`" in bad_request["description"], (name, input_name)
    listed = {(m.upper(), p) for p, item in paths.items() for m, op in item.items()
              if "x-checked-beyond-schema" in op["responses"].get("400", {})}
    assert listed == {tuple(name.split(" ", 1)) for name in CHECKED_BEYOND_SCHEMA}
