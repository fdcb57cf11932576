"""Revoked API keys and session families, known to every process that shares the state.

The database records every revocation and is the authority; the shared state tells every process
at once, without a database read per request (a key's row is cached for 30 s). While Redis is
unreachable :meth:`Revocations.is_revoked` answers None and the caller asks the database.
"""

from __future__ import annotations

from control_plane.state.base import SharedState, SharedStateUnavailable


def _key(kind: str, ident: str) -> str:
    return f"revoked:{kind}:{ident}"


class Revocations:
    def __init__(self, state: SharedState) -> None:
        self.state = state

    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        """Never raises: kept and replayed while Redis is unreachable."""
        self.state.set_eventually(_key(kind, ident), b"1", ttl_seconds)

    def is_revoked(self, kind: str, ident: str) -> bool | None:
        """Whether ``ident`` is revoked; None when Redis is unreachable (the caller asks the database)."""
        try:
            return self.state.get_pushed(_key(kind, ident)) is not None
        except SharedStateUnavailable:
            return None
