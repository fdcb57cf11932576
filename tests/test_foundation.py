"""The error model and probes, on both backends."""


def test_health(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_ready(client):
    import time

    deadline = time.monotonic() + 20
    response = client.get("/ready")
    while response.status_code == 503 and time.monotonic() < deadline:  # shards warming up after start
        assert response.json() == {"status": "unavailable"}
        time.sleep(0.05)
        response = client.get("/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


def test_unknown_route_is_spec_error(client):
    response = client.get("/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_wrong_method_is_spec_error(client):
    response = client.delete("/health")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_openapi_describes_400_not_422(client):
    schema = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    login = schema["paths"]["/v1/auth/login"]["post"]["responses"]
    assert "422" not in login and "400" in login
    assert "/v1/search/{profile_key}" in schema["paths"]


def test_huge_body_is_413(client, settings):
    body = b'{"q": "' + b"x" * (settings.max_body_bytes + 10) + b'"}'
    response = client.post("/v1/auth/login", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_chunked_huge_body_is_413(client, settings):
    def chunks():
        for _ in range(settings.max_body_bytes // 65536 + 2):
            yield b"x" * 65536

    response = client.post("/v1/auth/login", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_unhandled_error_is_500_without_trace(app, settings):
    from tests.fixtures.app import StartedAppClient

    @app.get("/boom-test-only")
    def boom() -> None:
        raise RuntimeError("secret internals")

    try:
        with StartedAppClient(app, raise_server_exceptions=False) as test_client:
            response = test_client.get("/boom-test-only")
    finally:
        app.router.routes = [r for r in app.router.routes if getattr(r, "path", "") != "/boom-test-only"]
    assert response.status_code == 500
    assert response.json() == {"error": {"code": "INTERNAL", "message": "Internal server error"}}
    assert "secret internals" not in response.text
