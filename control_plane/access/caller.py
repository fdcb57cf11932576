"""Who is calling: a raw bearer token turned into a :class:`Principal` (no FastAPI, so services and
the MCP tools use it too).

A token is a secret key (``ss_sk_…``), a public key (``ss_pk_…``) or a session access token. Keys
are looked up by their SHA-256, cached for :data:`KEY_CACHE_SECONDS`; a revocation reaches every
instance at once through the shared state (Redis), and while Redis is unreachable the database,
where revocations are recorded, decides. Session tokens are checked against their family.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy.orm import Session

from control_plane.access.keys import KEY_CACHE_SECONDS
from control_plane.access.registry import FamilyInfo, KeyInfo, directory
from control_plane.db import utcnow
from control_plane.runtime import Runtime
from control_plane.security import PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX, decode_access_token, hash_token
from shared.errors import unauthenticated

log = logging.getLogger("shopsearch.access")


@dataclass(frozen=True)
class Principal:
    kind: Literal["user", "secret_key", "public_key"]
    user_id: str | None = None
    family_id: str | None = None
    impersonated_by: str | None = None
    key: KeyInfo | None = None
    # An impersonation's organization: the only one it reaches (see ``reaches_org``).
    org_scope: str | None = None

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    @property
    def impersonating(self) -> bool:
        return self.impersonated_by is not None

    def reaches_org(self, org_id: str) -> bool:
        """An impersonation reaches only the organization its code was issued for."""
        return self.org_scope is None or self.org_scope == org_id


def _load_key(runtime: Runtime, db: Session | None, key_hash: str) -> KeyInfo | None:
    """The key from the database: through ``db``, or a session of its own when None."""
    if db is not None:
        return directory().key_by_hash(db, key_hash)
    with runtime.sessions() as fresh:
        return directory().key_by_hash(fresh, key_hash)


def resolve_key(runtime: Runtime, db: Session | None, token: str) -> KeyInfo:
    """The live key for a raw key string, or 401. ``db`` may be None to use the cache only."""
    key_hash = hash_token(token)
    cache = runtime.keys
    hit, info = cache.get(key_hash)
    if not hit:
        info = _load_key(runtime, db, key_hash)
        cache.put(key_hash, info)
    revoked = runtime.revocations.is_revoked("key", info.id) if info is not None else False
    if revoked is None:
        # Redis unreachable: the database (where revocations are recorded) decides, bypassing the cache
        info = _load_key(runtime, db, key_hash)
        cache.put(key_hash, info)
    if info is None or revoked:
        raise unauthenticated("Unknown or revoked API key")
    if info.expires_at is not None and info.expires_at <= utcnow():
        raise unauthenticated("API key expired")
    if cache.should_write_last_used(info.id):
        _touch_key(runtime, info.id)
    return info


# ``lastUsedAt`` is written by one thread of its own: key checks run on the event loop, and a write
# there would wait for the database's write lock while the request holding it waits for the loop to
# commit (SQLite has one writer: that stalled every request for the busy timeout).
_BOOKKEEPING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="key-last-used")


def _touch_key(runtime: Runtime, key_id: str) -> None:
    _BOOKKEEPING.submit(_write_last_used, runtime, key_id)


def _write_last_used(runtime: Runtime, key_id: str) -> None:
    try:
        with runtime.sessions.begin() as session:
            directory().key_used(session, key_id)
    except Exception:  # noqa: BLE001 - bookkeeping must never fail a request
        log.debug("recording when key %s was last used failed", key_id, exc_info=True)


def principal_from_token(runtime: Runtime, db: Session | None, token: str) -> Principal:
    if token.startswith(SECRET_KEY_PREFIX) or token.startswith(PUBLIC_KEY_PREFIX):
        info = resolve_key(runtime, db, token)
        kind: Literal["secret_key", "public_key"] = "secret_key" if info.type == "secret" else "public_key"
        return Principal(kind=kind, key=info)
    claims = decode_access_token(runtime.settings.signing_key(), token)
    if claims is None:
        raise unauthenticated("Invalid or expired session token")
    if runtime.revocations.is_revoked("family", claims.family_id):  # None (Redis unreachable): the family row below decides
        raise unauthenticated("Session revoked")
    family = _load_family(runtime, db, claims.family_id)
    if family is None or family.revoked_at is not None or family.user_id != claims.user_id:
        raise unauthenticated("Session revoked")
    if family.impersonated_by is not None and family.org_id is None:  # unscoped: refused, never widened
        raise unauthenticated("Session revoked")
    if family.expires_at is not None and family.expires_at <= utcnow():
        raise unauthenticated("Session expired")
    return Principal(
        kind="user", user_id=claims.user_id, family_id=claims.family_id, impersonated_by=family.impersonated_by,
        org_scope=family.org_id,
    )


def _load_family(runtime: Runtime, db: Session | None, family_id: str) -> FamilyInfo | None:
    if db is not None:
        return directory().family(db, family_id)
    with runtime.sessions() as fresh:
        return directory().family(fresh, family_id)


def revoke_family(runtime: Runtime, family_id: str) -> None:
    """Make a family's access tokens stop working at once, on every instance."""
    runtime.revocations.revoke("family", family_id, runtime.settings.access_token_ttl_seconds + 60)


def revoke_key(runtime: Runtime, key_id: str) -> None:
    runtime.revocations.revoke("key", key_id, int(KEY_CACHE_SECONDS * 4))
    runtime.keys.forget(key_id)


def impersonation_expiry(runtime: Runtime) -> datetime:
    return utcnow() + timedelta(seconds=runtime.settings.impersonation_ttl_seconds)
