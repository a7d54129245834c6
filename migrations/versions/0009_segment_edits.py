"""segment edits: clinicians' free-text corrections of transcript segments, originals kept

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 08:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'segment_edits',
        sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column('session_id', postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column('turn_index', sa.Integer(), nullable=False),
        sa.Column('original', sa.Text(), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('author_id', postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name='fk_segment_edits_session_id_sessions'),
        sa.PrimaryKeyConstraint('id', name='pk_segment_edits'),
    )
    op.create_index('ix_segment_edits_session_id', 'segment_edits', ['session_id'])


def downgrade() -> None:
    op.drop_index('ix_segment_edits_session_id', table_name='segment_edits')
    op.drop_table('segment_edits')
