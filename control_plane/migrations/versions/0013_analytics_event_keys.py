"""analytics: events counted once (a key per search, document and type) and distinct clients of a query

``analytics_event_keys`` holds one row per click or conversion counted, so a replayed event is not
counted again and the events of an index and day can be capped. ``analytics_queries.clients`` is a
63-bit set of who searched (popular queries need several clients); rows written before start empty.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analytics_event_keys",
        sa.Column("index_id", sa.String(40), primary_key=True),
        sa.Column("key", sa.String(32), primary_key=True),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("received", sa.Date(), nullable=False),
    )
    op.create_index("ix_analytics_event_keys_received", "analytics_event_keys", ["index_id", "received"])
    op.create_index("ix_analytics_event_keys_day", "analytics_event_keys", ["day"])
    with op.batch_alter_table("analytics_queries") as batch:
        batch.add_column(sa.Column("clients", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("analytics_queries") as batch:
        batch.drop_column("clients")
    op.drop_index("ix_analytics_event_keys_day", table_name="analytics_event_keys")
    op.drop_index("ix_analytics_event_keys_received", table_name="analytics_event_keys")
    op.drop_table("analytics_event_keys")
