"""Imports every domain's models so metadata (and Alembic) sees all tables."""

from control_plane.api_key.models import ApiKey
from control_plane.auth.models import EmailToken, ImpersonationCode, RefreshToken, SessionFamily, User
from control_plane.db import Base
from control_plane.org.models import Membership, Organization
from control_plane.project.models import Project

__all__ = [
    "ApiKey",
    "Base",
    "EmailToken",
    "ImpersonationCode",
    "Membership",
    "Organization",
    "Project",
    "RefreshToken",
    "SessionFamily",
    "User",
]
