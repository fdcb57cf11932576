"""Applies the Alembic migrations (``shopsearch db upgrade``; ``serve`` runs it on start)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from control_plane.db import private_dir, private_sqlite_file
from shared.settings import Settings

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config(str(MIGRATIONS / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("version_locations", str(MIGRATIONS / "versions"))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(settings: Settings, revision: str = "head") -> None:
    private_dir(settings.data_dir)
    private_sqlite_file(settings.resolved_database_url)  # Alembic opens the file with an engine of its own
    config = alembic_config(settings.resolved_database_url)
    config.attributes["settings"] = settings  # data migrations that need the secret key read it here
    command.upgrade(config, revision)
