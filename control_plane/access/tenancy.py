"""What a caller may do in an organization or a project (no FastAPI: services and MCP decide here too).

The decision always runs in this order (spec §5 rules 2 and 5, §7):

1. who is calling (401, :mod:`.caller`);
2. tenancy: the organization or project is the caller's (else 404); an impersonation's is only the
   organization its code was issued for (``Principal.reaches_org``);
3. existence: every id under it in the path (index, profile, replace session, document, key,
   task, member …) belongs to that parent and, for an index-scoped key, to its index (else 404),
   as the owning domain answers (:mod:`.registry`);
4. only then the caller's role, key access or credential type (403).

So an id of another tenant, or an unknown one, is 404 whatever the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from control_plane.access.caller import Principal
from control_plane.access.registry import KeyInfo, child_ids, directory, path_id
from shared.errors import ErrorCode, ServiceError, forbidden, not_found

ROLE_RANK = {"member": 1, "admin": 2, "owner": 3}
#: path parameters that name the parent itself rather than an id under it
_PARENTS = ("project_id", "index_id")


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


def reject_public_key(principal: Principal) -> None:
    if principal.kind == "public_key":
        raise forbidden("Public keys work only on the storefront search and suggest routes")


def reject_api_key(principal: Principal) -> None:
    reject_public_key(principal)
    if not principal.is_user:
        raise forbidden("This route needs a signed-in user; API keys cannot call it")


def forbid_impersonation(principal: Principal, what: str) -> None:
    if principal.impersonating:
        raise ServiceError(ErrorCode.IMPERSONATION_FORBIDDEN, f"{what} is not allowed while impersonating")


# --------------------------------------------------------------------------- organizations
def org_access(db: Session, principal: Principal, org_id: str, min_role: str, member_id: str | None = None) -> OrgAccess:
    """A signed-in member's access to an organization (and to ``member_id``, a member in the path)."""
    role: str | None = None
    if principal.key is not None:  # keys never call these, but another org's id is still 404
        if directory().project_org(db, principal.key.project_id) != org_id:
            raise not_found("Organization")
    else:
        assert principal.user_id is not None
        role = directory().member_role(db, org_id, principal.user_id) if principal.reaches_org(org_id) else None
        if role is None:
            raise not_found("Organization")
    if member_id is not None and directory().member_role(db, org_id, member_id) is None:
        raise not_found("Member")
    reject_api_key(principal)
    assert principal.user_id is not None and role is not None
    if ROLE_RANK[role] < ROLE_RANK[min_role]:
        raise forbidden(f"Needs the {min_role} role in this organization")
    return OrgAccess(org_id=org_id, user_id=principal.user_id, role=role, principal=principal)


# --------------------------------------------------------------------------- projects and indices
def project_tenancy(db: Session, principal: Principal, project_id: str) -> ProjectAccess:
    """Steps 1-2: the caller's view of a project, or 404 (no 403 here)."""
    if principal.key is not None:
        org_id = directory().project_org(db, project_id) if principal.key.project_id == project_id else None
        if org_id is None:
            raise not_found("Project")
        return ProjectAccess(project_id=project_id, org_id=org_id, principal=principal)
    assert principal.user_id is not None
    org_id = directory().project_org(db, project_id)
    role = directory().member_role(db, org_id, principal.user_id) if org_id is not None else None
    if org_id is None or role is None or not principal.reaches_org(org_id):
        raise not_found("Project")
    return ProjectAccess(project_id=project_id, org_id=org_id, principal=principal, role=role)


def check_path_ids(db: Session, access: ProjectAccess, path_ids: Mapping[str, str]) -> None:
    """Step 3 for project routes: every id under the project in the path exists there (else 404).
    An id no domain answers for is a RuntimeError (see :mod:`.registry`)."""
    index_id = path_ids.get("index_id")
    if index_id is not None:
        access.check_index(index_id)
        if not path_id("index_id").exists(db, access.project_id, None, index_id):
            raise not_found("Index")
    for name in path_ids:
        if name not in _PARENTS:
            path_id(name)  # an id nobody checks is refused, never let through
    under = index_id if index_id is not None else access.index_scope
    for child in child_ids():
        value = path_ids.get(child.name)
        if value is not None and not child.exists(db, access.project_id, under, value):
            raise not_found(child.what)


def require(access: ProjectAccess, *, write: bool, signed_in_only: bool = False) -> None:
    """Step 4: role, key access and credential type (403)."""
    principal = access.principal
    reject_public_key(principal)
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
    path_ids: Mapping[str, str] | None = None,
) -> ProjectAccess:
    """Decide a caller's access to a project and the ids under it in ``path_ids`` (404 for other
    tenants and unknown ids, then 403 for too little access)."""
    access = project_tenancy(db, principal, project_id)
    if path_ids:
        check_path_ids(db, access, path_ids)
    require(access, write=write, signed_in_only=signed_in_only)
    return access


def integration_access(db: Session, principal: Principal, project_id: str, index_id: str,
                       path_ids: Mapping[str, str]) -> IndexAccess:
    """Connecting an integration (spec §7): a full-access secret key of the index; a signed-in user
    who can see the index gets 403 ``INTEGRATION_KEY_ONLY`` whatever the role."""
    access = project_tenancy(db, principal, project_id)
    check_path_ids(db, access, path_ids)
    if principal.is_user:
        raise ServiceError(ErrorCode.INTEGRATION_KEY_ONLY, "Only a full-access secret key can connect an integration")
    require(access, write=True)
    return IndexAccess(**vars(access), index_id=index_id)


def access_for_key_project(principal: Principal, project_id: str) -> None:
    """404 unless the key belongs to ``project_id`` (storefront handles of other projects)."""
    if principal.key is None or principal.key.project_id != project_id:
        raise not_found()
