"""operations: task runner heartbeats, read by the status route

Each task runner writes its row every few seconds and deletes it when it stops
(control_plane/task/heartbeats.py); ``GET /v1/status`` counts the rows heard from lately.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "task_runners",
        sa.Column("id", sa.String(120), primary_key=True),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("task_runners")
