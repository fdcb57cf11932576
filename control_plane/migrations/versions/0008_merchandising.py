"""merchandising: synonyms and ranking rules

``indices.merch_version`` moves with every synonym or rule change of the index, so a serving
process recompiles an index's synonyms and rules only when they changed (the index row is read
anyway when the index epoch moves).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

import control_plane.db

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def _owned(name: str, *columns: sa.Column) -> None:
    op.create_table(
        name,
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("project_id", sa.String(40), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("index_id", sa.String(40), sa.ForeignKey("indices.id", ondelete="CASCADE"), nullable=False),
        *columns,
        sa.Column("created_at", control_plane.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", control_plane.db.UTCDateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table(name) as batch:
        batch.create_index(f"ix_{name}_index_id", ["index_id"])
        batch.create_index(f"ix_{name}_project_id", ["project_id"])


def upgrade() -> None:
    _owned(
        "synonyms",
        sa.Column("type", sa.String(10), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
        sa.Column("input", sa.String(200), nullable=True),
        sa.Column("synonyms", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
    )
    _owned(
        "rules",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
    )
    with op.batch_alter_table("indices") as batch:
        batch.add_column(sa.Column("merch_version", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("indices") as batch:
        batch.drop_column("merch_version")
    op.drop_table("rules")
    op.drop_table("synonyms")
