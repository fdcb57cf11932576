"""Search profiles: saved settings validated against the index mapping."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from control_plane.db import isoformat, utcnow
from control_plane.errors import profile_validation_error
from control_plane.profile import repository
from control_plane.profile.models import Profile
from control_plane.profile.schemas import InlineProfile, ProfileCreate, ProfileOut, ProfileSettings
from control_plane.profile.validation import profile_field_uses, validate_profile
from control_plane.usage import register_usage_provider
from control_plane.wire import decode_cursor, encode_cursor
from shared.errors import conflict, not_found
from shared.ids import new_handle, new_id


def parse_settings(raw: dict[str, Any]) -> ProfileSettings:
    """An inline profile from a search body, validated the same way as a saved one (its name and
    read-only fields are ignored)."""
    try:
        return InlineProfile.model_validate(raw)
    except ValidationError as exc:
        raise profile_validation_error([dict(e) for e in exc.errors()]) from exc


def settings_of(profile: Profile) -> ProfileSettings:
    return ProfileSettings.model_validate(profile.settings)


def to_out(profile: Profile) -> dict[str, Any]:
    out = ProfileOut.model_validate(
        {
            **profile.settings,
            "id": profile.id,
            "profileKey": profile.profile_key,
            "name": profile.name,
            "indexId": profile.index_id,
            "createdAt": isoformat(profile.created_at),
            "updatedAt": isoformat(profile.updated_at),
        }
    )
    return out.model_dump(by_alias=True)


def _stored(body: ProfileSettings) -> dict[str, Any]:
    return body.model_dump(by_alias=True, mode="json", exclude={"name"})


def create(db: Session, project_id: str, index_id: str, mapping: dict[str, Any], body: ProfileCreate) -> Profile:
    validate_profile(body, mapping)
    if repository.by_name(db, index_id, body.name) is not None:
        raise conflict("A profile with this name already exists in this index")
    profile = Profile(
        id=new_id("prf"),
        profile_key=new_handle("pk"),
        project_id=project_id,
        index_id=index_id,
        name=body.name,
        settings=_stored(body),
    )
    db.add(profile)
    db.flush()
    return profile


def get(db: Session, project_id: str, index_id: str, profile_id: str) -> Profile:
    profile = repository.get(db, project_id, index_id, profile_id)
    if profile is None:
        raise not_found("Profile")
    return profile


def update(
    db: Session, project_id: str, index_id: str, mapping: dict[str, Any], profile_id: str, body: ProfileCreate
) -> Profile:
    profile = get(db, project_id, index_id, profile_id)
    validate_profile(body, mapping)
    other = repository.by_name(db, index_id, body.name)
    if other is not None and other.id != profile.id:
        raise conflict("A profile with this name already exists in this index")
    profile.name = body.name
    profile.settings = _stored(body)
    profile.updated_at = utcnow()
    db.flush()
    return profile


def delete(db: Session, project_id: str, index_id: str, profile_id: str) -> None:
    db.delete(get(db, project_id, index_id, profile_id))
    db.flush()


# Capabilities the usage registry checks as mapping flags; the others only need the field to exist.
_FLAG_NEEDS = {"searchable", "facetable", "sortable", "vector"}


@register_usage_provider
def profile_uses(db: Session, index: Any) -> list[dict[str, Any]]:
    """Every field use of the index's profiles, for the usage registry (kind ``profile``)."""
    fields = (index.mapping or {}).get("fields") or {}
    uses: list[dict[str, Any]] = []
    for profile in repository.all_for_index(db, index.id):
        for field, path, capability in profile_field_uses(settings_of(profile)):
            needs: str | None = capability if capability in _FLAG_NEEDS else None
            if capability == "filterable":
                needs = "filterable" if (fields.get(field) or {}).get("filterable") else "facetable"
            uses.append(
                {"field": field, "kind": "profile", "id": profile.id, "name": profile.name, "path": path,
                 "needs": needs}
            )
    return uses


def list_page(db: Session, project_id: str, index_id: str, limit: int, cursor: str | None) -> tuple[list[Profile], str | None]:
    """One page of the index's Profile rows, and the cursor of the next page."""
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_for_index(db, project_id, index_id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor
