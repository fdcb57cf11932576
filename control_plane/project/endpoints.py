"""Projects (spec 4.11, CONTRACT §2)."""

from __future__ import annotations

from control_plane.access.labels import OrgAdmin, OrgMember, ProjectRead
from control_plane.deps import SessionDep
from control_plane.project import service
from control_plane.project.schemas import ProjectIn, ProjectList, ProjectOut
from control_plane.wire import COMMON_ERRORS, DEFAULT_LIMIT, Cursor, Limit, api_router, error_responses

router = api_router(tags=["projects"], responses=COMMON_ERRORS)



@router.get("/orgs/{org_id}/projects", summary="List the organization's projects")
def list_projects(
    access: OrgMember, db: SessionDep, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> ProjectList:
    items, next_cursor = service.list_projects(db, access.org_id, limit=limit, cursor=cursor)
    return ProjectList(items=[ProjectOut.model_validate(p) for p in items], next_cursor=next_cursor)


@router.post("/orgs/{org_id}/projects", status_code=201, responses=error_responses(409), summary="Create a project")
def create_project(body: ProjectIn, access: OrgAdmin, db: SessionDep) -> ProjectOut:
    return ProjectOut.model_validate(service.create_project(db, access.org_id, body.name))


@router.get("/projects/{project_id}", summary="Get a project")
def get_project(access: ProjectRead, db: SessionDep) -> ProjectOut:
    return ProjectOut.model_validate(service.get_project(db, access.org_id, access.project_id))
