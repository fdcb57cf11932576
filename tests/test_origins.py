"""Origins are parsed into scheme, host and port and compared structurally (issue 9, item 9)."""

from __future__ import annotations

import pytest

from control_plane.origins import origin_allowed, parse_origin, parse_pattern
from tests.factories import bearer, make_account, make_key, make_project
from tests.index.helpers import create_index, make_tenant

SHOP = ("https://*.shop-a.com", "https://shop-a.com")


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://x.shop-a.com", True),
        ("https://a.b.shop-a.com", True),
        ("https://shop-a.com", True),
        ("https://x.shop-a.com:443", True),  # the default port is the same origin
        ("HTTPS://X.SHOP-A.COM", True),  # scheme and host compare case-insensitively
        ("https://evil.com/.shop-a.com", False),  # a path is not part of an origin
        ("https://evil.com?.shop-a.com", False),
        ("https://evil.com#.shop-a.com", False),
        ("https://evil.com\\.shop-a.com", False),
        ("https://shop-a.com.evil.com", False),
        ("https://evilshop-a.com", False),
        ("https://x.shop-a.com:8443", False),
        ("http://x.shop-a.com", False),
        ("https://x.shop-a.com.", False),  # a trailing dot is another host to a browser
        ("https://x..shop-a.com", False),
        ("https://.shop-a.com", False),
        ("https://user@x.shop-a.com", False),
        ("https://evil.com@x.shop-a.com", False),
        ("https://x.shop-a.com/", False),  # browsers never send a path, not even "/"
        ("https://x.shop-a.com:0", False),
        ("https://x.shop-a.com:99999", False),
        ("https://x.shop-a.com:", False),
        ("https://x.shop-a.com%2eevil.com", False),
        ("https://x.shop-a.com evil", False),
        (" https://x.shop-a.com", False),
        ("https://xn--x.shop-a.com", False),  # not valid punycode
        ("https://bücher.shop-a.com", False),  # a header carries A-labels only
        ("null", False),
        ("", False),
        ("shop-a.com", False),
        ("ftp://x.shop-a.com", False),
        ("https://*.shop-a.com", False),
    ],
)
def test_origin_against_patterns(origin, expected):
    assert origin_allowed(origin, SHOP) is expected


@pytest.mark.parametrize(
    ("origin", "allowed", "expected"),
    [
        ("https://xn--bcher-kva.example", ("https://bücher.example",), True),  # IDNA on both sides
        ("https://a.xn--bcher-kva.example", ("https://*.BÜCHER.example",), True),
        ("http://localhost:3000", ("http://localhost:3000",), True),
        ("http://localhost", ("http://localhost:80",), True),
        ("http://[::1]:8080", ("http://[0:0::1]:8080",), True),
        ("http://127.0.0.1:8080", ("http://127.0.0.1:8080",), True),
        ("https://shop.example.com", ("https://shop.example.com/",), True),
        ("https://a.1.2.3.4", ("https://*.1.2.3.4",), False),  # no subdomains of an address
        ("https://a.com", ("https://*.com",), False),  # a pattern needs two labels under *.
        ("https://a.io", ("not an origin", "https://*"), False),
        ("https://other.io", (), False),
    ],
)
def test_origin_allowed_cases(origin, allowed, expected):
    assert origin_allowed(origin, allowed) is expected


@pytest.mark.parametrize(
    ("entry", "canonical"),
    [
        ("https://Shop.Example.com/", "https://shop.example.com"),
        ("https://x.shop-a.com:443", "https://x.shop-a.com"),
        ("http://x.shop-a.com:443", "http://x.shop-a.com:443"),
        ("https://*.Shop-A.com:8443", "https://*.shop-a.com:8443"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
        ("http://[::0:1]", "http://[::1]"),
        ("https://evil.com/.shop-a.com", None),
        ("https://user@shop-a.com", None),
        ("https://shop-a.com?x=1", None),
        ("https://shop-a.com.", None),
        ("https://a.*.com", None),
        ("https://*.com", None),
        ("*", None),
        ("null", None),
    ],
)
def test_allowed_origin_entries_are_canonical(entry, canonical):
    pattern = parse_pattern(entry)
    assert (str(pattern) if pattern is not None else None) == canonical


def test_parse_origin_splits_scheme_host_and_port():
    parsed = parse_origin("HTTPS://X.Shop-A.com:443")
    assert parsed is not None
    assert (parsed.scheme, parsed.host, parsed.port) == ("https", "x.shop-a.com", 443)


# --------------------------------------------------------------------------- over the API
def test_key_creation_validates_origins_by_parsing(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner)
    url = f"/v1/projects/{project_id}/api-keys"
    for bad in ("https://evil.com/.shop-a.com", "https://user@shop-a.com", "https://shop-a.com.", "https://shop-a.com?q"):
        response = client.post(url, headers=owner.headers,
                               json={"type": "public", "name": "web", "allowedOrigins": ["https://ok.io", bad]})
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
        assert [d["path"] for d in response.json()["error"]["details"]] == ["allowedOrigins[1]"]
    created = client.post(url, headers=owner.headers, json={
        "type": "public", "name": "web",
        "allowedOrigins": ["https://X.shop-a.com:443", "https://x.shop-a.com", "https://*.Bücher.example"],
    })
    assert created.status_code == 201, created.text
    assert created.json()["allowedOrigins"] == ["https://x.shop-a.com", "https://*.xn--bcher-kva.example"]


def test_storefront_refuses_an_origin_that_only_looks_like_a_subdomain(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "web", "queryFields": {"name": {"weight": 1}}}).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=list(SHOP))
    url = f"/v1/search/{profile['profileKey']}"
    for origin in ("https://evil.com/.shop-a.com", "https://shop-a.com.evil.com", "https://user@x.shop-a.com"):
        response = client.post(url, json={"q": ""}, headers={**bearer(public), "Origin": origin})
        assert response.status_code == 403, origin
        assert response.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    for origin in ("https://x.shop-a.com", "https://x.shop-a.com:443", "https://shop-a.com"):
        response = client.post(url, json={"q": ""}, headers={**bearer(public), "Origin": origin})
        assert response.status_code == 200, (origin, response.text)
