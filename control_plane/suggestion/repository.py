from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, defer

from control_plane.suggestion.models import CustomSuggestion, SuggestionConfig


def config_of(db: Session, project_id: str, index_id: str) -> SuggestionConfig | None:
    return db.scalar(
        select(SuggestionConfig)
        .options(defer(SuggestionConfig.built))
        .where(SuggestionConfig.index_id == index_id, SuggestionConfig.project_id == project_id)
    )


def config_by_index(db: Session, index_id: str, *, with_built: bool = False) -> SuggestionConfig | None:
    query = select(SuggestionConfig).where(SuggestionConfig.index_id == index_id)
    if not with_built:
        query = query.options(defer(SuggestionConfig.built))
    return db.scalar(query)


def index_id_of_key(db: Session, suggest_key: str) -> str | None:
    return db.scalar(select(SuggestionConfig.index_id).where(SuggestionConfig.suggest_key == suggest_key))


def built_of(db: Session, index_id: str) -> bytes | None:
    return db.scalar(select(SuggestionConfig.built).where(SuggestionConfig.index_id == index_id))


def all_configs(db: Session) -> list[SuggestionConfig]:
    return list(db.scalars(select(SuggestionConfig).options(defer(SuggestionConfig.built))))


def list_custom(db: Session, project_id: str, index_id: str, after: str | None, limit: int) -> list[CustomSuggestion]:
    query = select(CustomSuggestion).where(CustomSuggestion.project_id == project_id,
                                           CustomSuggestion.index_id == index_id)
    if after:
        query = query.where(CustomSuggestion.id > after)
    return list(db.scalars(query.order_by(CustomSuggestion.id).limit(limit)))


def custom_of_index(db: Session, index_id: str) -> list[CustomSuggestion]:
    return list(db.scalars(select(CustomSuggestion).where(CustomSuggestion.index_id == index_id)
                           .order_by(CustomSuggestion.id)))


def custom_ids(db: Session, index_id: str) -> list[str]:
    return list(db.scalars(select(CustomSuggestion.id).where(CustomSuggestion.index_id == index_id)
                           .order_by(CustomSuggestion.id)))


def get_custom(db: Session, project_id: str, index_id: str, suggestion_id: str) -> CustomSuggestion | None:
    return db.scalar(select(CustomSuggestion).where(
        CustomSuggestion.id == suggestion_id, CustomSuggestion.project_id == project_id,
        CustomSuggestion.index_id == index_id))


def project_of_suggest_key(db: Session, suggest_key: str) -> str | None:
    """The project behind a storefront suggest handle."""
    return db.scalar(select(SuggestionConfig.project_id).where(SuggestionConfig.suggest_key == suggest_key))


def custom_exists(db: Session, project_id: str, index_id: str | None, suggestion_id: str) -> bool:
    row = db.get(CustomSuggestion, suggestion_id)
    return row is not None and row.project_id == project_id and row.index_id == index_id
