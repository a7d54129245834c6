"""retention: a per-clinic transcript retention, and when a session's transcript expired

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 13:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('clinics', sa.Column('transcript_retention_days', sa.Integer(), nullable=True))
    op.add_column('sessions', sa.Column('transcript_expired_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('sessions', 'transcript_expired_at')
    op.drop_column('clinics', 'transcript_retention_days')
