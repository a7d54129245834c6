"""partial recording: a session made from a recording that stopped arriving (issue 26, item 2)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 16:15:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('sessions', sa.Column('partial_recording', postgresql.JSONB(astext_type=sa.Text()), nullable=True))


def downgrade() -> None:
    op.drop_column('sessions', 'partial_recording')
