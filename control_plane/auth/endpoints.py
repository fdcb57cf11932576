"""/v1/auth: sign-up, sign-in, sessions and impersonation (spec 4.11, CONTRACT §1).

The refresh token travels only in the HttpOnly ``shopsearch_refresh`` cookie, scoped to
``/v1/auth``; access tokens are returned in the body and sent as ``Authorization: Bearer``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Cookie, Depends, Query, Request, Response
from sqlalchemy.orm import Session

from control_plane.access.labels import SignedIn
from control_plane.access.tenancy import forbid_impersonation
from control_plane.auth import service, sessions
from control_plane.auth.schemas import (
    AcceptedOut,
    ChangePasswordIn,
    ForgotPasswordIn,
    ImpersonateIn,
    ImpersonationOut,
    LoginIn,
    LoginOut,
    MeOut,
    RegisterIn,
    RegisterOut,
    ResetPasswordIn,
    SessionList,
    SessionOut,
    TokenOut,
    UserOut,
    VerifyEmailOut,
)
from control_plane.db import after_commit, isoformat
from control_plane.deps import RuntimeDep, SessionDep, client_ip
from control_plane.hashing import busy
from control_plane.public_url import links_base, own_origin
from control_plane.runtime import Runtime
from control_plane.wire import Limit, api_router
from shared.errors import forbidden

router = api_router(prefix="/auth", tags=["auth"])

REFRESH_COOKIE = "shopsearch_refresh"
COOKIE_PATH = "/v1/auth"
RefreshCookie = Annotated[str | None, Cookie(alias=REFRESH_COOKIE, description="The refresh token set by login")]


def _per_ip(route: str, setting: str = "auth_limit_per_ip") -> Any:
    """A per-client-address limit on an unauthenticated route, counted before any work (429)."""

    def limit(request: Request, runtime: RuntimeDep) -> None:  # sync: a Redis call stays off the event loop
        runtime.limiter.hit(getattr(runtime.settings, setting), f"auth-ip:{route}", client_ip(request))

    return Depends(limit)


async def _hashing_room(runtime: RuntimeDep) -> None:
    """503 at once, on the event loop, while every password-hashing place is taken (see
    ``control_plane.hashing``): the surplus of a sign-in burst takes no request thread."""
    if runtime.hashing.saturated():
        raise busy()


HASHING_ROOM = Depends(_hashing_room)


async def _same_origin(request: Request, runtime: RuntimeDep) -> None:
    """The routes that set or read the refresh cookie answer only the service's own pages (or a
    client that sends no Origin, not a browser). ``SameSite=Strict`` alone lets a same-site page
    (another port, a sibling subdomain) log a user out or race two refreshes to revoke a family."""
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() != own_origin(request, runtime.settings.public_url):
        raise forbidden("This route answers only the service's own pages")


SAME_ORIGIN = Depends(_same_origin)


def _send(db: Session, runtime: Runtime, mail: service.Mail | None) -> None:
    """Send once the transaction that made the mail's token has committed (not from the answer's
    background: the link must work when it arrives, and a failed commit sends nothing)."""
    if mail is not None:
        after_commit(db, lambda: runtime.mailer.send_later(mail.to, mail.subject, mail.body))


def _set_refresh_cookie(response: Response, runtime: Runtime, token: str) -> None:
    response.set_cookie(
        REFRESH_COOKIE, token, max_age=runtime.settings.refresh_token_ttl_seconds, path=COOKIE_PATH,
        httponly=True, samesite="strict", secure=runtime.settings.cookie_secure,
    )


def _user_agent(request: Request) -> str | None:
    return request.headers.get("user-agent")


def _login_out(result: sessions.SignIn) -> LoginOut:
    return LoginOut(access_token=result.access_token, expires_in=result.expires_in, user=UserOut.of(result.user))


@router.post("/register", status_code=201, response_model=RegisterOut,
             dependencies=[HASHING_ROOM, _per_ip("register", "register_limit_per_ip")])
def register(body: RegisterIn, request: Request, db: SessionDep, runtime: RuntimeDep) -> RegisterOut:
    links = links_base(request, runtime.settings.public_url)
    user, mail = service.register(db, runtime, links, body.email, body.password, body.name, body.organization_name)
    _send(db, runtime, mail)
    return RegisterOut(user=UserOut.of(user))


@router.get("/verify-email", response_model=VerifyEmailOut, dependencies=[_per_ip("verify-email")])
def verify_email(db: SessionDep, token: Annotated[str, Query(min_length=1, max_length=200)]) -> VerifyEmailOut:
    """Bad, used or expired tokens answer 400 VALIDATION_ERROR (``details[0].path == "token"``)."""
    service.verify_email(db, token)
    return VerifyEmailOut(email_verified=True)


@router.post("/resend-verification", status_code=202, response_model=AcceptedOut)
def resend_verification(principal: SignedIn, request: Request, db: SessionDep, runtime: RuntimeDep) -> AcceptedOut:
    """Sends a new link (earlier ones stop working); nothing is sent when already verified."""
    links = links_base(request, runtime.settings.public_url)
    _send(db, runtime, service.resend_verification(db, runtime, links, principal.user_id or ""))
    return AcceptedOut()


@router.post("/login", response_model=LoginOut, dependencies=[SAME_ORIGIN, HASHING_ROOM, _per_ip("login")])
def login(body: LoginIn, request: Request, response: Response, db: SessionDep, runtime: RuntimeDep) -> LoginOut:
    result = sessions.login(db, runtime, body.email, body.password, _user_agent(request), client_ip(request))
    assert result.refresh_token is not None
    _set_refresh_cookie(response, runtime, result.refresh_token)
    return _login_out(result)


@router.post("/refresh", response_model=TokenOut, dependencies=[SAME_ORIGIN, _per_ip("refresh")])
def refresh(response: Response, db: SessionDep, runtime: RuntimeDep, cookie: RefreshCookie = None) -> TokenOut:
    result = sessions.refresh(db, runtime, cookie)
    assert result.refresh_token is not None
    _set_refresh_cookie(response, runtime, result.refresh_token)
    return TokenOut(access_token=result.access_token, expires_in=result.expires_in)


@router.post("/logout", status_code=204, response_class=Response, dependencies=[SAME_ORIGIN])
def logout(db: SessionDep, runtime: RuntimeDep, cookie: RefreshCookie = None) -> Response:
    sessions.logout(db, runtime, cookie)
    response = Response(status_code=204)
    response.delete_cookie(REFRESH_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict",
                           secure=runtime.settings.cookie_secure)
    return response


@router.post("/forgot-password", status_code=202, response_model=AcceptedOut,
             dependencies=[_per_ip("forgot-password")])
def forgot_password(body: ForgotPasswordIn, request: Request, db: SessionDep, runtime: RuntimeDep) -> AcceptedOut:
    """The same 202 whether or not an account has this email (malformed ones included)."""
    links = links_base(request, runtime.settings.public_url)
    _send(db, runtime, service.forgot_password(db, runtime, links, body.email))
    return AcceptedOut()


@router.post("/reset-password", status_code=204, response_class=Response,
             dependencies=[HASHING_ROOM, _per_ip("reset-password")])
def reset_password(body: ResetPasswordIn, db: SessionDep, runtime: RuntimeDep) -> Response:
    """Bad, used or expired tokens answer 400 VALIDATION_ERROR; every session of the user ends."""
    service.reset_password(db, runtime, body.token, body.password)
    return Response(status_code=204)


@router.post("/impersonate", response_model=LoginOut, dependencies=[_per_ip("impersonate")])
def impersonate(body: ImpersonateIn, request: Request, db: SessionDep, runtime: RuntimeDep) -> LoginOut:
    """Invalid, used or expired codes answer 401. No refresh cookie: the token lasts the whole
    impersonation (``expiresIn``)."""
    result = sessions.impersonate(db, runtime, body.code, _user_agent(request), client_ip(request))
    return _login_out(result)


@router.post("/impersonation/exit", status_code=204, response_class=Response)
def exit_impersonation(principal: SignedIn, db: SessionDep, runtime: RuntimeDep) -> Response:
    """403 FORBIDDEN when the session is not an impersonation."""
    sessions.exit_impersonation(db, runtime, principal)
    return Response(status_code=204)


@router.get("/me", response_model=MeOut)
def me(principal: SignedIn, db: SessionDep) -> MeOut:
    user = service.current_user(db, principal.user_id)
    impersonation = None
    if principal.impersonated_by is not None:
        family = service.current_family(db, principal)
        impersonation = ImpersonationOut(by=principal.impersonated_by, expires_at=isoformat(family.expires_at))
    return MeOut(**UserOut.of(user).model_dump(), impersonation=impersonation)


@router.post("/change-password", status_code=204, response_class=Response)
def change_password(body: ChangePasswordIn, principal: SignedIn, db: SessionDep, runtime: RuntimeDep) -> Response:
    """A wrong current password answers 400 VALIDATION_ERROR (path ``currentPassword``)."""
    forbid_impersonation(principal, "Changing the password")
    service.change_password(db, runtime, principal, body.current_password, body.new_password)
    return Response(status_code=204)


@router.get("/sessions", response_model=SessionList)
def list_sessions(
    principal: SignedIn,
    db: SessionDep,
    limit: Limit = 20,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
) -> SessionList:
    rows, next_cursor = sessions.list_sessions(db, principal, limit, cursor)
    return SessionList(items=[SessionOut.of(f, principal.family_id) for f in rows], next_cursor=next_cursor)


@router.delete("/sessions/{family_id}", status_code=204, response_class=Response)
def end_session(family_id: str, principal: SignedIn, db: SessionDep, runtime: RuntimeDep) -> Response:
    forbid_impersonation(principal, "Ending a session")
    sessions.end_session(db, runtime, principal, family_id)
    return Response(status_code=204)
