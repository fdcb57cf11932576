from __future__ import annotations

from typing import Literal

from control_plane.email_address import EmailAddress
from control_plane.wire import RequestModel, Timestamp, WireModel
from shared.plans import PlanName

Role = Literal["owner", "admin", "member"]


class OrgOut(WireModel):
    id: str
    name: str
    plan: str
    role: Role
    created_at: Timestamp


class OrgList(WireModel):
    items: list[OrgOut]
    next_cursor: str | None


class PlanIn(RequestModel):
    plan: PlanName


class MemberOut(WireModel):
    user_id: str
    email: str
    name: str | None
    role: Role
    created_at: Timestamp


class MemberList(WireModel):
    items: list[MemberOut]
    next_cursor: str | None


class MemberIn(RequestModel):
    email: EmailAddress
    role: Role


class MemberRoleIn(RequestModel):
    role: Role
