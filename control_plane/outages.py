"""Which failures mean a dependency is down — 503 ``UNAVAILABLE`` naming it — rather than a bug (500).

The database is down when a connection cannot be made or was lost (``OperationalError``,
``InterfaceError``, an invalidated connection, the pool timing out). Constraint violations
(``IntegrityError``, rendered as 409 elsewhere) and SQL or programming errors stay what they are.
SQLite reports syntax errors and missing tables as ``OperationalError`` too, so there only its
messages about the file (locked, unreadable, disk) count. Redis is down when a shared-state or
rate-limit call fails (see :mod:`control_plane.state`, which falls back where it can).
"""

from __future__ import annotations

import sqlite3
from typing import Literal

import psycopg
import redis
from limits.errors import StorageError
from sqlalchemy import exc as sa_exc

from control_plane.state import SharedStateUnavailable
from shared.errors import ErrorCode, ServiceError

Part = Literal["database", "redis"]

_SQLITE_UNAVAILABLE = ("database is locked", "unable to open database", "disk i/o error", "database or disk is full",
                       "attempt to write a readonly database")
_MESSAGES: dict[Part, tuple[str, str]] = {
    "database": ("The database is unavailable", "the database cannot be reached; try again shortly"),
    "redis": ("Redis is unavailable", "the shared state store (Redis) cannot be reached; try again shortly"),
}
RETRY_AFTER_SECONDS = 2
REDIS_ERRORS: tuple[type[Exception], ...] = (SharedStateUnavailable, redis.RedisError, StorageError)


def _database_down(exc: BaseException) -> bool:
    if isinstance(exc, sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True  # the pool found no connection in time / a connection died on checkout
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated or isinstance(exc, sa_exc.InterfaceError):
            return True
        if not isinstance(exc, sa_exc.OperationalError):
            return False
        if isinstance(exc.orig, sqlite3.OperationalError):
            return any(text in str(exc.orig).lower() for text in _SQLITE_UNAVAILABLE)
        return True  # PostgreSQL: connection failures, shutdowns, canceled queries, serialization failures
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


def unavailable_part(exc: BaseException) -> Part | None:
    """The dependency whose outage caused ``exc`` (looking through its causes), or None for other failures."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.IntegrityError):
            return None
        if _database_down(current):
            return "database"
        if isinstance(current, REDIS_ERRORS):
            return "redis"
        current = current.__cause__ or current.__context__
    return None


def unavailable(part: Part) -> ServiceError:
    """``503 UNAVAILABLE`` with ``details: [{"path": part, "message": …}]`` and a ``Retry-After``."""
    message, detail = _MESSAGES[part]
    return ServiceError(
        ErrorCode.UNAVAILABLE,
        message,
        [{"path": part, "message": detail}],
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
