"""Small helpers for the auth tests: unique identities, sign-up and sign-in through the API."""

from __future__ import annotations

import itertools
import os
import secrets

from fastapi.testclient import TestClient
from httpx import Response

from control_plane.runtime import Runtime

PASSWORD = "a long enough password"
_ip_counter = itertools.count(1)


def unique_email() -> str:
    return f"auth-{secrets.token_hex(6)}@example.com"


def unique_ip() -> str:
    """A client address no other test uses (per-IP rate limits stay independent)."""
    n = next(_ip_counter) + (os.getpid() % 200) * 1000
    return f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"


def runtime_of(app) -> Runtime:  # type: ignore[no-untyped-def]
    return app.state.runtime  # type: ignore[no-any-return]


def new_client(app, ip: str | None = None) -> TestClient:  # type: ignore[no-untyped-def]
    """A client with its own cookie jar and its own IP address."""
    return TestClient(app, raise_server_exceptions=False, client=(ip or unique_ip(), 50000))


def register(client: TestClient, email: str | None = None, password: str = PASSWORD, **extra: object) -> str:
    email = email or unique_email()
    response = client.post("/v1/auth/register", json={"email": email, "password": password, **extra})
    assert response.status_code == 201, response.text
    return email


def login(client: TestClient, email: str, password: str = PASSWORD) -> Response:
    return client.post("/v1/auth/login", json={"email": email, "password": password})


def signed_up(app, password: str = PASSWORD) -> tuple[TestClient, str, str]:  # type: ignore[no-untyped-def]
    """A registered user signed in on a fresh client: (client with refresh cookie, email, access token)."""
    client = new_client(app)
    email = register(client, password=password)
    response = login(client, email, password)
    assert response.status_code == 200, response.text
    return client, email, response.json()["accessToken"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def with_cookie(token: str) -> dict[str, str]:
    """An explicit refresh cookie, overriding whatever the client's jar holds."""
    return {"Cookie": f"shopsearch_refresh={token}"}


def code_of(response: Response) -> str:
    return str(response.json()["error"]["code"])
