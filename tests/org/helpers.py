"""Credentials that must be refused (401) and small request helpers, shared by the org, project and
api_key tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from control_plane.access.caller import revoke_family, revoke_key
from control_plane.api_key.models import ApiKey
from control_plane.auth.models import SessionFamily
from control_plane.db import utcnow
from control_plane.security import hash_token, issue_access_token
from tests.factories import Account, bearer, make_key, runtime_of, sign_in


def expired_token(app, account: Account) -> str:  # type: ignore[no-untyped-def]
    token, _ = issue_access_token(runtime_of(app).settings.signing_key(), account.user_id, account.family_id, -1)
    return token


def forged_token(account: Account) -> str:
    token, _ = issue_access_token("not-the-signing-key-of-this-service-0123456789", account.user_id, account.family_id, 600)
    return token


def revoked_family_token(app, account: Account) -> str:  # type: ignore[no-untyped-def]
    """A fresh session of ``account``'s user whose family was then revoked (as logout does)."""
    runtime = runtime_of(app)
    token, family_id = sign_in(app, account.user_id)
    with runtime.sessions.begin() as db:
        db.execute(update(SessionFamily).where(SessionFamily.id == family_id).values(revoked_at=utcnow()))
    revoke_family(runtime, family_id)
    return token


def revoke_key_directly(app, raw_key: str) -> None:  # type: ignore[no-untyped-def]
    runtime = runtime_of(app)
    with runtime.sessions.begin() as db:
        key = db.query(ApiKey).filter(ApiKey.key_hash == hash_token(raw_key)).one()
        key.revoked_at = utcnow()
        key_id = key.id
    revoke_key(runtime, key_id)


def revoked_key(app, project_id: str) -> str:  # type: ignore[no-untyped-def]
    raw = make_key(app, project_id)
    revoke_key_directly(app, raw)
    return raw


def unauthenticated_headers(app, account: Account, project_id: str) -> dict[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """Every kind of credential that must answer 401 UNAUTHENTICATED."""
    from datetime import timedelta

    return {
        "missing": {},
        "basic": {"Authorization": "Basic x"},
        "bearer-empty": {"Authorization": "Bearer"},
        "bearer-two-parts": {"Authorization": "Bearer a b"},
        "garbage": bearer("not-a-token"),
        "forged": bearer(forged_token(account)),
        "expired": bearer(expired_token(app, account)),
        "revoked-family": bearer(revoked_family_token(app, account)),
        "unknown-key": bearer("ss_sk_" + "x" * 43),
        "revoked-key": bearer(revoked_key(app, project_id)),
        "expired-key": bearer(make_key(app, project_id, expires_in=timedelta(seconds=-1))),
    }


def call(client, method: str, url: str, headers: dict[str, str], json: Any = None):  # type: ignore[no-untyped-def]
    return client.request(method, url, headers=headers, json=json)


def assert_error(response, status: int, code: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    return body  # type: ignore[no-any-return]


def impersonated(app, account: Account) -> dict[str, str]:  # type: ignore[no-untyped-def]
    token, _ = sign_in(app, account.user_id, impersonated_by="support:alice", org_id=account.org_id)
    return bearer(token)
