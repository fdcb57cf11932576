"""Opaque, service-wide unique ids (``idx_…``, ``prj_…``) and unguessable public handles."""

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def new_handle(prefix: str) -> str:
    """A random URL-safe public handle (profileKey, suggestKey)."""
    return f"{prefix}_{secrets.token_urlsafe(18)}"
