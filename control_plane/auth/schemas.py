"""Wire models of /v1/auth (camelCase on the wire, snake_case in Python)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

from control_plane.auth.models import SessionFamily
from control_plane.db import isoformat
from control_plane.email_address import EmailAddress, EmailLookup
from control_plane.user.models import User
from control_plane.wire import RequestModel

PASSWORD_MIN = 10
PASSWORD_MAX = 1024


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


NewPassword = Annotated[str, StringConstraints(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX)]


# --------------------------------------------------------------------------- requests
class RegisterIn(RequestModel):
    email: EmailAddress
    password: NewPassword
    name: str | None = Field(default=None, max_length=200)
    organization_name: str | None = Field(default=None, min_length=1, max_length=200)


class LoginIn(RequestModel):
    email: EmailLookup
    password: str = Field(max_length=PASSWORD_MAX)


class ForgotPasswordIn(RequestModel):
    email: EmailLookup


class ResetPasswordIn(RequestModel):
    token: str = Field(min_length=1, max_length=200)
    password: NewPassword


class ChangePasswordIn(RequestModel):
    current_password: str = Field(max_length=PASSWORD_MAX)
    new_password: NewPassword


class ImpersonateIn(RequestModel):
    code: str = Field(min_length=1, max_length=200)


# --------------------------------------------------------------------------- answers
class UserOut(Wire):
    id: str
    email: str
    name: str | None
    email_verified: bool
    created_at: str

    @classmethod
    def of(cls, user: User) -> UserOut:
        return cls(
            id=user.id,
            email=user.email,
            name=user.name,
            email_verified=user.email_verified_at is not None,
            created_at=isoformat(user.created_at) or "",
        )


class RegisterOut(Wire):
    user: UserOut


class AcceptedOut(Wire):
    """The body of a 202 that starts work off the request (an email)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    status: Literal["accepted"] = "accepted"


class VerifyEmailOut(Wire):
    email_verified: bool = True


class TokenOut(Wire):
    access_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int


class LoginOut(TokenOut):
    user: UserOut


class ImpersonationOut(Wire):
    by: str
    expires_at: str | None


class MeOut(UserOut):
    impersonation: ImpersonationOut | None = None


class SessionOut(Wire):
    family_id: str
    created_at: str
    last_used_at: str
    user_agent: str | None
    ip: str | None
    current: bool

    @classmethod
    def of(cls, family: SessionFamily, current_family_id: str | None) -> SessionOut:
        return cls(
            family_id=family.id,
            created_at=isoformat(family.created_at) or "",
            last_used_at=isoformat(family.last_used_at) or "",
            user_agent=family.user_agent,
            ip=family.ip,
            current=family.id == current_family_id,
        )


class SessionList(Wire):
    items: list[SessionOut]
    next_cursor: str | None
