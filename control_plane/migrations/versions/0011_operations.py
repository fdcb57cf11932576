"""operations: status and task runner heartbeats (empty when nothing is needed)

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
