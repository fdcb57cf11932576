"""Imports every domain's models so metadata (and Alembic) sees all tables."""

from control_plane.analytics.models import DocumentDay, EventKey, IndexDay, QueryDay
from control_plane.api_key.models import ApiKey
from control_plane.auth.models import EmailToken, ImpersonationCode, RefreshToken, SessionFamily
from control_plane.db import Base
from control_plane.document.models import Document, IdempotencyRecord, ReplaceSession, StagedDocument
from control_plane.index.models import Index
from control_plane.org.models import Membership, Organization
from control_plane.profile.models import Profile
from control_plane.project.models import Project
from control_plane.rule.models import Rule
from control_plane.serving.models import ServingProcess
from control_plane.suggestion.models import CustomSuggestion, SuggestionConfig
from control_plane.synonym.models import Synonym
from control_plane.task.models import Task, TaskRunnerBeat
from control_plane.user.models import User

__all__ = [
    "ApiKey",
    "DocumentDay",
    "EventKey",
    "IndexDay",
    "QueryDay",
    "Base",
    "Document",
    "IdempotencyRecord",
    "Index",
    "ReplaceSession",
    "StagedDocument",
    "Task",
    "TaskRunnerBeat",
    "EmailToken",
    "ImpersonationCode",
    "Membership",
    "Organization",
    "Profile",
    "Project",
    "RefreshToken",
    "Rule",
    "ServingProcess",
    "SessionFamily",
    "SuggestionConfig",
    "CustomSuggestion",
    "Synonym",
    "User",
]
