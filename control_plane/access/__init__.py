"""The one authorization layer: who the caller is, what they may do, and every access label of
spec §5 as a reusable dependency.

* :mod:`.caller`: a bearer token turned into a :class:`Principal` (keys cached, revocations shared);
* :mod:`.tenancy`: organization and project access, ids in the path, roles (no FastAPI);
* :mod:`.labels`: the labels as FastAPI dependencies (``SignedIn`` … ``IndexWrite``);
* :mod:`.storefront`: the storefront's key, origin and session checks;
* :mod:`.registry`: what the layer asks the domains (it imports none of them).
"""

from control_plane.access.caller import (
    KeyCache,
    Principal,
    impersonation_expiry,
    principal_from_token,
    resolve_key,
    revoke_family,
    revoke_key,
)
from control_plane.access.labels import (
    CurrentPrincipal,
    IndexRead,
    IndexWrite,
    IntegrationKey,
    OrgAdmin,
    OrgMember,
    OrgOwner,
    ProjectAdminSignedIn,
    ProjectMemberSignedIn,
    ProjectRead,
    ProjectWrite,
    SecretKeyCaller,
    SignedIn,
    authenticate,
    bearer_token,
    index_reader,
    request_principal,
    require_integration_key,
    require_secret_key,
    require_signed_in,
)
from control_plane.access.registry import KeyInfo
from control_plane.access.storefront import storefront_principal
from control_plane.access.tenancy import (
    ROLE_RANK,
    IndexAccess,
    OrgAccess,
    ProjectAccess,
    access_for_key_project,
    forbid_impersonation,
    project_access,
)
from control_plane.origins import origin_allowed

__all__ = [
    "ROLE_RANK",
    "CurrentPrincipal",
    "IndexAccess",
    "IndexRead",
    "IndexWrite",
    "IntegrationKey",
    "KeyCache",
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
    "authenticate",
    "bearer_token",
    "forbid_impersonation",
    "impersonation_expiry",
    "index_reader",
    "origin_allowed",
    "principal_from_token",
    "project_access",
    "request_principal",
    "require_integration_key",
    "require_secret_key",
    "require_signed_in",
    "resolve_key",
    "revoke_family",
    "revoke_key",
    "storefront_principal",
]
