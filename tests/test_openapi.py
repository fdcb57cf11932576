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
