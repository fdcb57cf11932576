"""What the access layer asks the domains, and what they answer with.

The access layer imports no domain: every domain's endpoints import it, so an import the other way
would close a loop. Each question is answered by the owning domain's repository instead, installed
once from one list (:mod:`control_plane.wiring`) before the app serves or a command runs:

* :class:`Directory`: the caller's key, session family, project, membership and plan;
* :class:`PathId`: for each id a project route may carry in its path, whether it exists under the
  project (and index).

Asking before anything was installed is a :class:`RuntimeError` (a 500), never an answer, and so is
a path id no domain answers for: a forgotten registration refuses requests, it lets none through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.orm import Session


@dataclass(frozen=True)
class KeyInfo:
    """An API key as the access layer sees it (cached by hash for a few seconds)."""

    id: str
    project_id: str
    type: Literal["secret", "public"]
    access: str | None
    index_id: str | None
    allowed_origins: tuple[str, ...]
    expires_at: datetime | None


@dataclass(frozen=True)
class FamilyInfo:
    """A session family (one sign-in) as the access layer sees it."""

    user_id: str
    revoked_at: datetime | None
    impersonated_by: str | None
    org_id: str | None  # an impersonation's organization, the only one it reaches
    expires_at: datetime | None


@dataclass(frozen=True)
class Directory:
    """The access layer's questions about callers and tenants, each answered by one domain."""

    #: the live (unrevoked) key with this SHA-256, or None (api_key)
    key_by_hash: Callable[[Session, str], KeyInfo | None]
    #: record that the key was just used (api_key; called off the request path)
    key_used: Callable[[Session, str], None]
    #: the session family, or None (auth)
    family: Callable[[Session, str], FamilyInfo | None]
    #: the organization holding the project, or None when there is no such project (project)
    project_org: Callable[[Session, str], str | None]
    #: the user's role in the organization, or None when not a member (org)
    member_role: Callable[[Session, str, str], str | None]
    #: the project behind a storefront profile handle, or None (profile)
    profile_project: Callable[[Session, str], str | None]


#: ``(db, project_id, index_id, id) -> bool``: the id exists under the project and, when
#: ``index_id`` is given, under that index (the path's, or an index-scoped key's).
ExistsUnder = Callable[[Session, str, str | None, str], bool]


@dataclass(frozen=True)
class PathId:
    """An id a project route may carry in its path, and who answers whether it exists there."""

    name: str  # the path parameter (``profile_id``)
    what: str  # what is not found (``Profile``)
    exists: ExistsUnder


_directory: Directory | None = None
_path_ids: dict[str, PathId] = {}


def install(directory: Directory, path_ids: Iterable[PathId]) -> None:
    """Set the domains' answers (``control_plane.wiring.install``); installing again replaces them."""
    global _directory
    _directory = directory
    _path_ids.clear()
    _path_ids.update((p.name, p) for p in path_ids)


def directory() -> Directory:
    if _directory is None:
        raise RuntimeError("the access layer has no directory: call control_plane.wiring.install() first")
    return _directory


def path_id(name: str) -> PathId:
    """Who answers for the path parameter ``name``; a RuntimeError when no domain does."""
    found = _path_ids.get(name)
    if found is None:
        raise RuntimeError(f"no domain answers whether a {name!r} exists: register it in control_plane.wiring")
    return found


def child_ids() -> list[PathId]:
    """The registered ids under a project other than the index, in registration order."""
    return [p for name, p in _path_ids.items() if name != "index_id"]
