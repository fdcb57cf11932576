"""The one authorization layer: every access label of spec §5 as a reusable dependency.

A request carries ``Authorization: Bearer <token>``: a secret key (``ss_sk_…``), a public key
(``ss_pk_…``) or a session access token. ``authenticate`` turns it into a :class:`Principal`;
the label dependencies below (``SignedIn``, ``OrgMember`` … ``ProjectWrite``, ``IndexRead`` …)
decide, always in this order (spec §5 rules 2 and 5, §7):

1. who is calling (401);
2. tenancy: the organization or project in the path is the caller's (else 404); an
   impersonation's is only the organization its code was issued for (``Principal.reaches_org``);
3. existence: every id under it in the path (index, profile, replace session, document, key,
   task, member) belongs to that parent and, for an index-scoped key, to its index (else 404);
4. only then the caller's role, key access or credential type (403).

So an id of another tenant, or an unknown one, is 404 whatever the caller, and it comes before the
body is validated (dependencies run first). The two hot routes keep their own fast paths:
``index_reader`` decides a project's secret key without the database, and the storefront decides
a handle after resolving it.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Literal

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.api_key.models import ApiKey
from control_plane.auth.models import SessionFamily
from control_plane.db import utcnow
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.document.models import Document, ReplaceSession
from control_plane.index.models import Index
from control_plane.org.models import Membership
from control_plane.origins import origin_allowed
from control_plane.profile.models import Profile
from control_plane.project.models import Project
from control_plane.rule.models import Rule
from control_plane.runtime import Runtime
from control_plane.security import (
    PUBLIC_KEY_PREFIX,
    SECRET_KEY_PREFIX,
    decode_access_token,
    hash_token,
)
from control_plane.sharedstate import SharedStateUnavailable
from control_plane.suggestion.models import CustomSuggestion
from control_plane.synonym.models import Synonym
from control_plane.task.models import Task
from shared.errors import ErrorCode, ServiceError, forbidden, not_found, unauthenticated

log = logging.getLogger("shopsearch.access")
ROLE_RANK = {"member": 1, "admin": 2, "owner": 3}
KEY_CACHE_SECONDS = 30.0
LAST_USED_WRITE_SECONDS = 60.0


@dataclass(frozen=True)
class KeyInfo:
    id: str
    project_id: str
    type: Literal["secret", "public"]
    access: str | None
    index_id: str | None
    allowed_origins: tuple[str, ...]
    expires_at: datetime | None


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


@dataclass
class ProjectAccess:
    """What a caller may do in one project; index-scoped keys are narrowed by ``check_index``."""

    project_id: str
    org_id: str
    principal: Principal
    role: str | None = None

    @property
    def key(self) -> KeyInfo | None:
        return self.principal.key

    @property
    def index_scope(self) -> str | None:
        return self.key.index_id if self.key else None

    def check_index(self, index_id: str) -> None:
        if self.index_scope is not None and self.index_scope != index_id:
            raise not_found("Index")


@dataclass
class IndexAccess(ProjectAccess):
    index_id: str = field(default="")


@dataclass
class OrgAccess:
    org_id: str
    user_id: str
    role: str
    principal: Principal


# --------------------------------------------------------------------------- key lookup cache
class KeyCache:
    """Key lookups by hash, cached briefly; revocation is checked on every use through shared state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[KeyInfo | None, float]] = {}
        self._last_used_written: dict[str, float] = {}

    def get(self, key_hash: str) -> tuple[bool, KeyInfo | None]:
        with self._lock:
            entry = self._entries.get(key_hash)
        if entry is None or entry[1] < time.monotonic():
            return False, None
        return True, entry[0]

    def put(self, key_hash: str, info: KeyInfo | None) -> None:
        with self._lock:
            if len(self._entries) > 100_000:
                self._entries.clear()
            self._entries[key_hash] = (info, time.monotonic() + KEY_CACHE_SECONDS)

    def forget(self, key_id: str) -> None:
        with self._lock:
            for key_hash, (info, _) in list(self._entries.items()):
                if info is not None and info.id == key_id:
                    del self._entries[key_hash]

    def should_write_last_used(self, key_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last_used_written.get(key_id, 0.0) < LAST_USED_WRITE_SECONDS:
                return False
            self._last_used_written[key_id] = now
            return True


def key_cache(runtime: Runtime) -> KeyCache:
    cache = runtime.extras.get("key_cache")
    if cache is None:
        cache = runtime.extras["key_cache"] = KeyCache()
    return cache  # type: ignore[no-any-return]


def _load_key(db: Session, key_hash: str) -> KeyInfo | None:
    row = db.scalar(select(ApiKey).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None)))
    if row is None:
        return None
    return KeyInfo(
        id=row.id,
        project_id=row.project_id,
        type="secret" if row.type == "secret" else "public",
        access=row.access,
        index_id=row.index_id,
        allowed_origins=tuple(row.allowed_origins or ()),
        expires_at=row.expires_at,
    )


def resolve_key(runtime: Runtime, db: Session | None, token: str) -> KeyInfo:
    """The live key for a raw key string, or 401. ``db`` may be None to use the cache only."""
    key_hash = hash_token(token)
    cache = key_cache(runtime)
    hit, info = cache.get(key_hash)
    if not hit:
        if db is None:
            with runtime.sessions() as fresh:
                info = _load_key(fresh, key_hash)
        else:
            info = _load_key(db, key_hash)
        cache.put(key_hash, info)
    revoked = _revoked(runtime, "key", info.id) if info is not None else False
    if revoked is None:
        # Redis unreachable: the database (where revocations are recorded) decides, bypassing the cache
        info = _load_key_fresh(runtime, db, key_hash)
        cache.put(key_hash, info)
    if info is None or revoked:
        raise unauthenticated("Unknown or revoked API key")
    if info.expires_at is not None and info.expires_at <= utcnow():
        raise unauthenticated("API key expired")
    if cache.should_write_last_used(info.id):
        _touch_key(runtime, info.id)
    return info


def _revoked(runtime: Runtime, kind: str, ident: str) -> bool | None:
    """Whether Redis lists ``ident`` as revoked; None when Redis is unreachable (the caller asks the database)."""
    try:
        return runtime.state.is_revoked(kind, ident)
    except SharedStateUnavailable:
        return None


def _load_key_fresh(runtime: Runtime, db: Session | None, key_hash: str) -> KeyInfo | None:
    if db is not None:
        return _load_key(db, key_hash)
    with runtime.sessions() as fresh:
        return _load_key(fresh, key_hash)


# ``lastUsedAt`` is written by one thread of its own: key checks run on the event loop, and a write
# there would wait for the database's write lock while the request holding it waits for the loop to
# commit (SQLite has one writer: that stalled every request for the busy timeout).
_BOOKKEEPING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="key-last-used")


def _touch_key(runtime: Runtime, key_id: str) -> None:
    _BOOKKEEPING.submit(_write_last_used, runtime, key_id)


def _write_last_used(runtime: Runtime, key_id: str) -> None:
    try:
        with runtime.sessions.begin() as session:
            row = session.get(ApiKey, key_id)
            if row is not None:
                row.last_used_at = utcnow()
    except Exception:  # noqa: BLE001 - bookkeeping must never fail a request
        log.debug("recording when key %s was last used failed", key_id, exc_info=True)


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise unauthenticated("Missing Authorization header")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise unauthenticated("Authorization must be 'Bearer <token>'")
    return token


def principal_from_token(runtime: Runtime, db: Session | None, token: str) -> Principal:
    if token.startswith(SECRET_KEY_PREFIX) or token.startswith(PUBLIC_KEY_PREFIX):
        info = resolve_key(runtime, db, token)
        kind: Literal["secret_key", "public_key"] = "secret_key" if info.type == "secret" else "public_key"
        return Principal(kind=kind, key=info)
    claims = decode_access_token(runtime.settings.signing_key(), token)
    if claims is None:
        raise unauthenticated("Invalid or expired session token")
    if _revoked(runtime, "family", claims.family_id):  # None (Redis unreachable): the family row below decides
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


def _load_family(runtime: Runtime, db: Session | None, family_id: str) -> SessionFamily | None:
    if db is not None:
        return db.get(SessionFamily, family_id)
    with runtime.sessions() as fresh:
        return fresh.get(SessionFamily, family_id)


def revoke_family(runtime: Runtime, family_id: str) -> None:
    """Make a family's access tokens stop working at once, on every instance."""
    runtime.state.revoke("family", family_id, runtime.settings.access_token_ttl_seconds + 60)


def revoke_key(runtime: Runtime, key_id: str) -> None:
    runtime.state.revoke("key", key_id, int(KEY_CACHE_SECONDS * 4))
    key_cache(runtime).forget(key_id)


# --------------------------------------------------------------------------- label dependencies
def authenticate(request: Request, runtime: RuntimeDep, db: SessionDep) -> Principal:
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    principal = principal_from_token(runtime, db, bearer_token(request))
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(authenticate)]


async def request_principal(runtime: Runtime, request: Request) -> Principal:
    """:func:`authenticate` for hot routes, without a request-scoped session: API keys come from
    the key cache on the event loop (as on the storefront), session tokens from the thread pool."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    token = bearer_token(request)
    if token.startswith((SECRET_KEY_PREFIX, PUBLIC_KEY_PREFIX)):
        principal = principal_from_token(runtime, None, token)
    else:
        principal = await run_in_threadpool(principal_from_token, runtime, None, token)
    request.state.principal = principal
    return principal


def _check_index_read(runtime: Runtime, principal: Principal, project_id: str, index_id: str) -> None:
    with runtime.sessions() as db:
        project_access(db, principal, project_id, write=False, path_ids={"index_id": index_id})


async def index_reader(project_id: str, index_id: str, request: Request, runtime: RuntimeDep) -> Principal:
    """The label "index read" (as ``IndexRead``) for hot routes: a secret key of the project is
    decided without the database (the route's resolution answers 404 for an unknown index);
    everyone else through :func:`project_access` in the thread pool.
    As a dependency it answers 401/403/404 before the body is validated, like the other labels."""
    principal = await request_principal(runtime, request)
    key = principal.key
    if principal.kind == "secret_key" and key is not None and key.project_id == project_id:
        if key.index_id not in (None, index_id):
            raise not_found("Index")
        return principal
    await run_in_threadpool(_check_index_read, runtime, principal, project_id, index_id)
    return principal


def _reject_public_key(principal: Principal) -> None:
    if principal.kind == "public_key":
        raise forbidden("Public keys work only on the storefront search and suggest routes")


def _reject_api_key(principal: Principal) -> None:
    _reject_public_key(principal)
    if not principal.is_user:
        raise forbidden("This route needs a signed-in user; API keys cannot call it")


def require_signed_in(principal: CurrentPrincipal) -> Principal:
    _reject_api_key(principal)
    return principal


SignedIn = Annotated[Principal, Depends(require_signed_in)]


def require_secret_key(principal: CurrentPrincipal) -> Principal:
    _reject_public_key(principal)
    if principal.kind != "secret_key":
        raise forbidden("This route needs a secret API key")
    return principal


SecretKeyCaller = Annotated[Principal, Depends(require_secret_key)]


def forbid_impersonation(principal: Principal, what: str) -> None:
    if principal.impersonating:
        raise ServiceError(ErrorCode.IMPERSONATION_FORBIDDEN, f"{what} is not allowed while impersonating")


def _membership_role(db: Session, org_id: str, user_id: str) -> str | None:
    return db.scalar(select(Membership.role).where(Membership.org_id == org_id, Membership.user_id == user_id))


# --------------------------------------------------------------------------- ids in the path (step 3)
def _index_id_exists(db: Session, access: ProjectAccess, index_id: str) -> None:
    access.check_index(index_id)
    index = db.get(Index, index_id)  # by primary key: the route's own lookup then hits the identity map
    if index is None or index.project_id != access.project_id:
        raise not_found("Index")


def _profile_exists(db: Session, access: ProjectAccess, index_id: str | None, profile_id: str) -> bool:
    row = db.get(Profile, profile_id)
    return row is not None and row.project_id == access.project_id and row.index_id == index_id


def _replace_session_exists(db: Session, access: ProjectAccess, index_id: str | None, session_id: str) -> bool:
    row = db.get(ReplaceSession, session_id)
    return row is not None and row.index_id == index_id and row.source == "api"


def _document_exists(db: Session, access: ProjectAccess, index_id: str | None, doc_id: str) -> bool:
    row = db.get(Document, (index_id, doc_id))
    return row is not None and not row.deleted


def _key_exists(db: Session, access: ProjectAccess, index_id: str | None, key_id: str) -> bool:
    row = db.get(ApiKey, key_id)
    return row is not None and row.project_id == access.project_id and row.revoked_at is None


def _task_exists(db: Session, access: ProjectAccess, index_id: str | None, task_id: str) -> bool:
    task_index = db.scalar(select(Task.index_id).where(Task.id == task_id, Task.project_id == access.project_id))
    return task_index is not None and access.index_scope in (None, task_index)


def _custom_suggestion_exists(db: Session, access: ProjectAccess, index_id: str | None, suggestion_id: str) -> bool:
    row = db.get(CustomSuggestion, suggestion_id)
    return row is not None and row.project_id == access.project_id and row.index_id == index_id


def _synonym_exists(db: Session, access: ProjectAccess, index_id: str | None, synonym_id: str) -> bool:
    row = db.get(Synonym, synonym_id)
    return row is not None and row.project_id == access.project_id and row.index_id == index_id


def _rule_exists(db: Session, access: ProjectAccess, index_id: str | None, rule_id: str) -> bool:
    row = db.get(Rule, rule_id)
    return row is not None and row.project_id == access.project_id and row.index_id == index_id


# Path parameter -> (what is not found, does it exist under the project and the path's index).
_PROJECT_CHILDREN = {
    "profile_id": ("Profile", _profile_exists),
    "session_id": ("Replace session", _replace_session_exists),
    "doc_id": ("Document", _document_exists),
    "key_id": ("API key", _key_exists),
    "task_id": ("Task", _task_exists),
    "suggestion_id": ("Custom suggestion", _custom_suggestion_exists),
    "synonym_id": ("Synonym", _synonym_exists),
    "rule_id": ("Rule", _rule_exists),
}


def _check_path_ids(db: Session, access: ProjectAccess, path_ids: dict[str, str]) -> None:
    """Step 3 for project routes: every id under the project in the path exists there (else 404)."""
    index_id = path_ids.get("index_id")
    if index_id is not None:
        _index_id_exists(db, access, index_id)
    for name, (what, exists) in _PROJECT_CHILDREN.items():
        value = path_ids.get(name)
        if value is not None and not exists(db, access, index_id, value):
            raise not_found(what)


# --------------------------------------------------------------------------- organizations
def _org_dependency(min_role: str):  # type: ignore[no-untyped-def]
    def dependency(org_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep) -> OrgAccess:
        role: str | None = None
        if principal.key is not None:  # keys never call these, but another org's id is still 404
            project = db.get(Project, principal.key.project_id)
            if project is None or project.org_id != org_id:
                raise not_found("Organization")
        else:
            assert principal.user_id is not None
            role = _membership_role(db, org_id, principal.user_id) if principal.reaches_org(org_id) else None
            if role is None:
                raise not_found("Organization")
        member_id = request.path_params.get("user_id")
        if member_id is not None and _membership_role(db, org_id, member_id) is None:
            raise not_found("Member")
        _reject_api_key(principal)
        assert principal.user_id is not None and role is not None
        if ROLE_RANK[role] < ROLE_RANK[min_role]:
            raise forbidden(f"Needs the {min_role} role in this organization")
        return OrgAccess(org_id=org_id, user_id=principal.user_id, role=role, principal=principal)

    return dependency


OrgMember = Annotated[OrgAccess, Depends(_org_dependency("member"))]
OrgAdmin = Annotated[OrgAccess, Depends(_org_dependency("admin"))]
OrgOwner = Annotated[OrgAccess, Depends(_org_dependency("owner"))]


# --------------------------------------------------------------------------- projects and indices
def _project_tenancy(db: Session, principal: Principal, project_id: str) -> ProjectAccess:
    """Steps 1-2: the caller's view of a project, or 404 (no 403 here)."""
    if principal.key is not None:
        if principal.key.project_id != project_id:
            raise not_found("Project")
        project = db.get(Project, project_id)
        if project is None:
            raise not_found("Project")
        return ProjectAccess(project_id=project_id, org_id=project.org_id, principal=principal)
    assert principal.user_id is not None
    row = db.execute(
        select(Project.org_id, Membership.role)
        .join(Membership, Membership.org_id == Project.org_id)
        .where(Project.id == project_id, Membership.user_id == principal.user_id)
    ).first()
    if row is None or not principal.reaches_org(row[0]):
        raise not_found("Project")
    org_id, role = row
    return ProjectAccess(project_id=project_id, org_id=org_id, principal=principal, role=role)


def _require(access: ProjectAccess, *, write: bool, signed_in_only: bool = False) -> None:
    """Step 4: role, key access and credential type (403)."""
    principal = access.principal
    _reject_public_key(principal)
    if principal.kind == "secret_key":
        if signed_in_only:
            raise forbidden("This route needs a signed-in user; API keys cannot call it")
        assert principal.key is not None
        if write and principal.key.access != "full":
            raise forbidden("This route needs a full-access key")
        return
    assert access.role is not None
    if write and ROLE_RANK[access.role] < ROLE_RANK["admin"]:
        raise forbidden("Needs the admin role in this project's organization")


def project_access(
    db: Session,
    principal: Principal,
    project_id: str,
    *,
    write: bool,
    signed_in_only: bool = False,
    path_ids: dict[str, str] | None = None,
) -> ProjectAccess:
    """Decide a caller's access to a project and the ids under it in ``path_ids`` (404 for other
    tenants and unknown ids, then 403 for too little access)."""
    access = _project_tenancy(db, principal, project_id)
    if path_ids:
        _check_path_ids(db, access, path_ids)
    _require(access, write=write, signed_in_only=signed_in_only)
    return access


def _project_dependency(*, write: bool, signed_in_only: bool = False):  # type: ignore[no-untyped-def]
    def dependency(project_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep) -> ProjectAccess:
        return project_access(
            db, principal, project_id, write=write, signed_in_only=signed_in_only, path_ids=request.path_params
        )

    return dependency


def _index_dependency(*, write: bool):  # type: ignore[no-untyped-def]
    def dependency(
        project_id: str, index_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep
    ) -> IndexAccess:
        access = project_access(db, principal, project_id, write=write, path_ids=request.path_params)
        return IndexAccess(**vars(access), index_id=index_id)

    return dependency


def require_integration_key(
    project_id: str, index_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep
) -> IndexAccess:
    """Connecting an integration (spec §7): a full-access secret key of the index; a signed-in user
    who can see the index gets 403 ``INTEGRATION_KEY_ONLY`` whatever the role."""
    access = _project_tenancy(db, principal, project_id)
    _check_path_ids(db, access, request.path_params)
    if principal.is_user:
        raise ServiceError(ErrorCode.INTEGRATION_KEY_ONLY, "Only a full-access secret key can connect an integration")
    _require(access, write=True)
    return IndexAccess(**vars(access), index_id=index_id)


# "Project member or any secret key" / "Project admin or a full-access secret key"
ProjectRead = Annotated[ProjectAccess, Depends(_project_dependency(write=False))]
ProjectWrite = Annotated[ProjectAccess, Depends(_project_dependency(write=True))]
# "Project member / admin (signed in)": API keys cannot call these.
ProjectMemberSignedIn = Annotated[ProjectAccess, Depends(_project_dependency(write=False, signed_in_only=True))]
ProjectAdminSignedIn = Annotated[ProjectAccess, Depends(_project_dependency(write=True, signed_in_only=True))]
# The same labels on routes under an index: index-scoped keys get 404 for every other index.
IndexRead = Annotated[IndexAccess, Depends(_index_dependency(write=False))]
IndexWrite = Annotated[IndexAccess, Depends(_index_dependency(write=True))]
IntegrationKey = Annotated[IndexAccess, Depends(require_integration_key)]


# --------------------------------------------------------------------------- storefront
def storefront_principal(runtime: Runtime, request: Request, db: Session | None = None) -> Principal:
    """A public key from an allowed origin, or a secret key (label of spec 4.1).

    The caller must still check that the handle (profile / suggest key) belongs to the key's
    project, answering 404 otherwise.
    """
    principal = principal_from_token(runtime, db, bearer_token(request))
    if principal.kind == "user":
        _refuse_user_on_storefront(runtime, db, principal, request.path_params.get("profile_key"))
    if principal.kind == "public_key":
        assert principal.key is not None
        origin = request.headers.get("origin")
        if not origin or not origin_allowed(origin, principal.key.allowed_origins):
            raise ServiceError(ErrorCode.ORIGIN_NOT_ALLOWED, "This origin is not allowed for this public key")
    return principal


def _refuse_user_on_storefront(runtime: Runtime, db: Session | None, principal: Principal, handle: str | None) -> None:
    """A session never calls the storefront: 403, or 404 when the handle is not of its organizations.
    (Only this refusal reads the database; keys take the hot path.)"""
    if handle is not None:
        query = (
            select(Membership.role)
            .join(Project, Project.org_id == Membership.org_id)
            .join(Profile, Profile.project_id == Project.id)
            .where(Profile.profile_key == handle, Membership.user_id == principal.user_id)
        )
        if principal.org_scope is not None:
            query = query.where(Project.org_id == principal.org_scope)
        if db is None:
            with runtime.sessions() as fresh:
                visible = fresh.scalar(query) is not None
        else:
            visible = db.scalar(query) is not None
        if not visible:
            raise not_found("Search profile")
    raise forbidden("Storefront routes take an API key")


def access_for_key_project(principal: Principal, project_id: str) -> None:
    """404 unless the key belongs to ``project_id`` (storefront handles of other projects)."""
    if principal.key is None or principal.key.project_id != project_id:
        raise not_found()


def impersonation_expiry(runtime: Runtime) -> datetime:
    return utcnow() + timedelta(seconds=runtime.settings.impersonation_ttl_seconds)


__all__ = [
    "CurrentPrincipal",
    "IndexAccess",
    "IndexRead",
    "IndexWrite",
    "IntegrationKey",
    "KeyInfo",
    "OrgAccess",
    "OrgAdmin",
    "OrgMember",
    "OrgOwner",
    "Principal",
    "ProjectAccess",
    "ProjectAdminSignedIn",
    "ProjectMemberSignedIn",
    "ProjectRead",
    "ProjectWrite",
    "SecretKeyCaller",
    "SignedIn",
    "access_for_key_project",
    "forbid_impersonation",
    "index_reader",
    "origin_allowed",
    "project_access",
    "request_principal",
    "revoke_family",
    "revoke_key",
    "storefront_principal",
]
