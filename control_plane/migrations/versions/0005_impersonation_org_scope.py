"""impersonation scope: a session family records the one organization an impersonation reaches

Impersonation sessions opened before this column existed reach no organization at all (the access
layer refuses an impersonation without an organization), so they are revoked here.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

import control_plane.db

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('session_families', schema=None) as batch_op:
        batch_op.add_column(sa.Column('org_id', sa.String(length=40), nullable=True))
        batch_op.create_foreign_key('fk_session_families_org_id', 'organizations', ['org_id'], ['id'],
                                    ondelete='CASCADE')
    families = sa.table('session_families', sa.column('impersonated_by', sa.String),
                        sa.column('revoked_at', control_plane.db.UTCDateTime(timezone=True)))
    op.get_bind().execute(
        sa.update(families)
        .where(families.c.impersonated_by.is_not(None), families.c.revoked_at.is_(None))
        .values(revoked_at=control_plane.db.utcnow())
    )


def downgrade() -> None:
    with op.batch_alter_table('session_families', schema=None) as batch_op:
        batch_op.drop_constraint('fk_session_families_org_id', type_='foreignkey')
        batch_op.drop_column('org_id')
