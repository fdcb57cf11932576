"""autocomplete: suggestion config, custom suggestions, built suggestions

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

import control_plane.db

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('suggestion_configs',
    sa.Column('index_id', sa.String(length=40), nullable=False),
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('suggest_key', sa.String(length=64), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('built', sa.LargeBinary(), nullable=True),
    sa.Column('built_version', sa.Integer(), nullable=False),
    sa.Column('built_count', sa.Integer(), nullable=False),
    sa.Column('built_seq', sa.BigInteger(), nullable=False),
    sa.Column('built_generation', sa.Integer(), nullable=False),
    sa.Column('built_at', control_plane.db.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', control_plane.db.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', control_plane.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['index_id'], ['indices.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('index_id'),
    sa.UniqueConstraint('suggest_key')
    )
    with op.batch_alter_table('suggestion_configs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_suggestion_configs_project_id'), ['project_id'], unique=False)

    op.create_table('custom_suggestions',
    sa.Column('id', sa.String(length=40), nullable=False),
    sa.Column('project_id', sa.String(length=40), nullable=False),
    sa.Column('index_id', sa.String(length=40), nullable=False),
    sa.Column('text', sa.String(length=200), nullable=False),
    sa.Column('weight', sa.Integer(), nullable=False),
    sa.Column('created_at', control_plane.db.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['index_id'], ['indices.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('custom_suggestions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_custom_suggestions_index_id'), ['index_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_custom_suggestions_project_id'), ['project_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('custom_suggestions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_custom_suggestions_project_id'))
        batch_op.drop_index(batch_op.f('ix_custom_suggestions_index_id'))
    op.drop_table('custom_suggestions')
    with op.batch_alter_table('suggestion_configs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_suggestion_configs_project_id'))
    op.drop_table('suggestion_configs')
