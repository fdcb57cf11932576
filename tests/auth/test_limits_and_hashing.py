"""Per-IP limits on every unauthenticated auth route, bounded password hashing that holds no
database connection, only failed sign-ins counted, and tokens masked in logged mail.

The timing side (bursts of concurrent requests) is tested over real HTTP in
tests/e2e/test_auth_under_load.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from limits import parse

from control_plane.auth.service import RESET
from control_plane.hashing import Admitted, PasswordHashing
from control_plane.mailer import Mailer
from control_plane.security import random_token
from shared.settings import Settings, SmtpSettings
from tests.auth.helpers import (
    PASSWORD,
    bearer,
    code_of,
    login,
    new_client,
    register,
    runtime_of,
    signed_up,
    unique_email,
)
from tests.fixtures.ports import free_port

ROUTES: dict[str, tuple[str, str, Callable[[], dict[str, Any]]]] = {
    # route: (method, path, request keyword arguments)
    "register": ("POST", "/v1/auth/register", lambda: {"json": {"email": unique_email(), "password": PASSWORD}}),
    "login": ("POST", "/v1/auth/login", lambda: {"json": {"email": unique_email(), "password": PASSWORD}}),
    "refresh": ("POST", "/v1/auth/refresh", lambda: {}),
    "verify-email": ("GET", "/v1/auth/verify-email", lambda: {"params": {"token": "not-a-token"}}),
    "forgot-password": ("POST", "/v1/auth/forgot-password", lambda: {"json": {"email": unique_email()}}),
    "reset-password": ("POST", "/v1/auth/reset-password", lambda: {"json": {"token": "nope", "password": PASSWORD}}),
    "impersonate": ("POST", "/v1/auth/impersonate", lambda: {"json": {"code": "not-a-code"}}),
}
# what each request above is answered while under the limit (a 500 is not "not limited")
UNDER_LIMIT: dict[str, tuple[int, str | None]] = {
    "register": (201, None),
    "login": (401, "UNAUTHENTICATED"),
    "refresh": (401, "UNAUTHENTICATED"),
    "verify-email": (400, "VALIDATION_ERROR"),
    "forgot-password": (202, None),
    "reset-password": (400, "VALIDATION_ERROR"),
    "impersonate": (401, "UNAUTHENTICATED"),
}


def _assert_answered(route: str, response: Any) -> None:
    status, code = UNDER_LIMIT[route]
    assert response.status_code == status, (route, response.status_code, response.text)
    if code is not None:
        assert code_of(response) == code, (route, response.text)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_unauthenticated_routes_are_limited_per_ip(app, monkeypatch, route):
    settings = runtime_of(app).settings
    monkeypatch.setattr(settings, "auth_limit_per_ip", "3/minute")
    monkeypatch.setattr(settings, "register_limit_per_ip", "3/hour")
    method, path, request = ROUTES[route]
    client = new_client(app)
    for _ in range(3):
        _assert_answered(route, client.request(method, path, **request()))
    refused = client.request(method, path, **request())
    assert refused.status_code == 429
    assert code_of(refused) == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    # Another address is not affected, and neither is another route from this one.
    _assert_answered(route, new_client(app).request(method, path, **request()))
    other = "forgot-password" if route != "forgot-password" else "verify-email"
    o_method, o_path, o_request = ROUTES[other]
    _assert_answered(other, client.request(o_method, o_path, **o_request()))


def test_register_default_limit_is_stricter_than_the_other_routes():
    from shared.settings import Settings

    settings = Settings()
    per_hour = {s: parse(getattr(settings, s)) for s in ("register_limit_per_ip", "auth_limit_per_ip")}
    hourly = {s: item.amount * 3600 / item.get_expiry() for s, item in per_hour.items()}
    assert hourly["register_limit_per_ip"] < hourly["auth_limit_per_ip"]


def test_only_failed_sign_ins_count(app):
    limit = parse(runtime_of(app).settings.login_limit_per_email).amount
    email = register(new_client(app))
    for attempt in range(limit - 1):
        assert login(new_client(app), email, f"wrong {attempt}").status_code == 401
    for _ in range(5):  # successes are given back
        assert login(new_client(app), email).status_code == 200
    assert login(new_client(app), email, "wrong again").status_code == 401
    refused = login(new_client(app), email, "and again")
    assert (refused.status_code, code_of(refused)) == (429, "RATE_LIMITED")


# --------------------------------------------------------------------------- hashing
class HeldHash:
    """Once armed, password hashes and verifications wait until released, to look around meanwhile."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.started = threading.Event()
        self.release = threading.Event()
        for name in ("hash", "verify"):
            original = getattr(Admitted, name)
            monkeypatch.setattr(Admitted, name, self._held(original))

    def _held(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def held(admitted: Admitted, *args: Any) -> Any:
            if self.armed:
                self.started.set()
                self.release.wait(10)
            return original(admitted, *args)

        return held


def _no_connection_seen(app) -> bool:  # type: ignore[no-untyped-def]
    """True when, within 2 s, the pool has no connection checked out at some moment (the task
    runner takes one only briefly now and then)."""
    pool = runtime_of(app).engine.pool
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if pool.checkedout() == 0:  # type: ignore[attr-defined]
            return True
        time.sleep(0.005)
    return False


@pytest.fixture
def held(monkeypatch) -> Iterator[HeldHash]:  # type: ignore[no-untyped-def]
    hold = HeldHash(monkeypatch)
    yield hold
    hold.armed = False
    hold.release.set()


def _while_hashing(app, held: HeldHash, operation: Callable[[], Any]) -> tuple[Any, bool]:  # type: ignore[no-untyped-def]
    """Run ``operation`` in a thread; while its hash is held, see whether no connection is out."""
    held.armed = True
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(operation()))
    thread.start()
    assert held.started.wait(10), "the operation never hashed"
    free = _no_connection_seen(app)
    held.release.set()
    thread.join(30)
    return result[0], free


def test_sign_in_holds_no_connection_while_hashing_and_sheds_load_past_the_queue(app, monkeypatch, held):
    runtime = runtime_of(app)
    monkeypatch.setattr(runtime, "hashing", PasswordHashing(slots=1, queue=0))
    monkeypatch.setattr(runtime.settings, "login_limit_per_email", "2/minute")
    email = register(new_client(app))
    held.armed = True
    thread_result: list[Any] = []
    thread = threading.Thread(target=lambda: thread_result.append(login(new_client(app), email)))
    thread.start()
    assert held.started.wait(10)
    assert _no_connection_seen(app), "a database connection was held during the password check"
    # The one place is taken: another sign-in answers 503 at once, before any database work.
    busy = login(new_client(app), email, "wrong password")
    assert (busy.status_code, code_of(busy)) == (503, "UNAVAILABLE")
    assert int(busy.headers["retry-after"]) >= 1
    held.release.set()
    thread.join(30)
    assert thread_result[0].status_code == 200
    # Neither the success nor the 503 (no password tried) counted: two failures fit in the limit.
    held.armed = False
    assert [login(new_client(app), email, "wrong").status_code for _ in range(3)] == [401, 401, 429]


def test_register_holds_no_connection_while_hashing(app, held):
    response, free = _while_hashing(app, held, lambda: new_client(app).post(
        "/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}))
    assert response.status_code == 201
    assert free


def test_change_password_holds_no_connection_while_hashing(app, held):
    client, email, token = signed_up(app)
    response, free = _while_hashing(app, held, lambda: client.post(
        "/v1/auth/change-password", headers=bearer(token),
        json={"currentPassword": PASSWORD, "newPassword": "another long password"}))
    assert response.status_code == 204
    assert free


def test_reset_password_holds_no_connection_while_hashing(app, held):
    from control_plane.auth import repository as repo

    email = register(new_client(app))
    runtime = runtime_of(app)
    with runtime.sessions.begin() as db:
        user = repo.get_user_by_email(db, email)
        assert user is not None
        token = repo.add_email_token(db, user.id, RESET, 600)
    response, free = _while_hashing(app, held, lambda: new_client(app).post(
        "/v1/auth/reset-password", json={"token": token, "password": "another long password"}))
    assert response.status_code == 204
    assert free
    held.armed = False
    assert login(new_client(app), email, "another long password").status_code == 200


# --------------------------------------------------------------------------- mail in the log
def _smtp(host: str | None, port: int = 25) -> SmtpSettings:
    return SmtpSettings(host=host, port=port, user=None, password=None, sender="s <s@example.com>", tls=False)


def test_mail_written_to_the_log_shows_only_a_token_prefix(caplog):
    token = random_token()
    body = f"Open this link:\nhttp://127.0.0.1:8000/reset-password?token={token}\n"
    caplog.set_level(logging.INFO, logger="shopsearch.mail")
    Mailer(_smtp(None)).send("someone@example.com", "Reset", body)
    logged = caplog.text
    assert token not in logged
    assert f"token={token[:6]}…" in logged

    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="shopsearch.mail")  # a local service without SMTP
    Mailer(_smtp(None)).send("someone@example.com", "Reset", body)
    assert token in caplog.text


def test_a_local_service_without_smtp_logs_links_that_work(caplog):
    """Listening only on loopback with no SMTP host: the whole link is logged (a local sign-up in
    the cabinet can be finished); anywhere else the token stays cut."""
    token = random_token()
    body = f"http://127.0.0.1:8000/verify-email?token={token}\n"
    caplog.set_level(logging.INFO, logger="shopsearch.mail")
    for host, whole in (("127.0.0.1", True), ("::1", True), ("localhost", True), ("0.0.0.0", False),
                        ("192.168.1.5", False), (None, False)):
        caplog.clear()
        settings = Settings(listen_host=host, smtp_host=None)
        assert settings.smtp.log_whole is whole
        Mailer(settings.smtp).send("someone@example.com", "Verify", body)
        assert (token in caplog.text) is whole, host
    assert Settings(listen_host="127.0.0.1", smtp_host="127.0.0.1").smtp.log_whole is False


def test_mail_that_could_not_be_sent_is_logged_masked(caplog):
    token = random_token()
    caplog.set_level(logging.INFO, logger="shopsearch.mail")
    Mailer(_smtp("127.0.0.1", free_port())).send(  # nothing listens there
        "someone@example.com", "Verify", f"http://x/verify-email?token={token}\n")
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert token not in caplog.text
    assert f"token={token[:6]}…" in caplog.text
