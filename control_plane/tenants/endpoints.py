"""The organization's plan (spec 4.11, CONTRACT §2): a change every index of the organization follows."""

from __future__ import annotations

from control_plane.access.labels import OrgOwner
from control_plane.access.tenancy import forbid_impersonation
from control_plane.db import after_commit
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.org.schemas import OrgOut, PlanIn
from control_plane.tenants import service
from control_plane.wire import COMMON_ERRORS, api_router

router = api_router(tags=["organizations"], responses=COMMON_ERRORS)


@router.put("/orgs/{org_id}/plan", summary="Change the organization's plan")
def change_plan(body: PlanIn, access: OrgOwner, db: SessionDep, runtime: RuntimeDep) -> OrgOut:
    forbid_impersonation(access.principal, "Changing the plan")
    org, index_ids = service.change_plan(db, access.org_id, access.role, body.plan)

    def move_epochs() -> None:
        for index_id in index_ids:
            runtime.epochs.bump(index_id)

    after_commit(db, move_epochs)
    return OrgOut.model_validate(org)
