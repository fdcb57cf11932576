"""Alembic environment: the URL comes from the caller's config (``shopsearch db upgrade``)."""

from alembic import context
from sqlalchemy import engine_from_config, pool

from control_plane.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations() -> None:
    connectable = config.attributes.get("connection")
    if connectable is not None:
        context.configure(connection=connectable, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config(config.get_section(config.config_ini_section) or {}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
