"""analytics: aggregated search counts and click/conversion events

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def _counter(name: str) -> sa.Column:
    return sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "analytics_queries",
        sa.Column("index_id", sa.String(40), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("query_hash", sa.String(16), primary_key=True),
        sa.Column("query", sa.String(200), nullable=False),
        _counter("searches"),
        _counter("no_results"),
        _counter("hits"),
        _counter("clicks"),
        _counter("conversions"),
        _counter("positioned_clicks"),
        _counter("position_sum"),
    )
    op.create_index("ix_analytics_queries_day", "analytics_queries", ["day"])
    op.create_table(
        "analytics_days",
        sa.Column("index_id", sa.String(40), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        _counter("suggests"),
    )
    op.create_index("ix_analytics_days_day", "analytics_days", ["day"])
    op.create_table(
        "analytics_documents",
        sa.Column("index_id", sa.String(40), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("document_id", sa.String(512), primary_key=True),
        _counter("clicks"),
        _counter("conversions"),
    )
    op.create_index("ix_analytics_documents_day", "analytics_documents", ["day"])


def downgrade() -> None:
    op.drop_index("ix_analytics_documents_day", table_name="analytics_documents")
    op.drop_table("analytics_documents")
    op.drop_index("ix_analytics_days_day", table_name="analytics_days")
    op.drop_table("analytics_days")
    op.drop_index("ix_analytics_queries_day", table_name="analytics_queries")
    op.drop_table("analytics_queries")
