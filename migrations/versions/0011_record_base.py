"""record base: sessions.polished_turns, the publish step's turns every record change rebuilds from

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 13:20:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('sessions', sa.Column('polished_turns', postgresql.JSONB(none_as_null=True, astext_type=sa.Text()),
                                        nullable=True))
    # Records published before: their published turns are the best base there is.
    op.execute("UPDATE sessions SET polished_turns = published_turns WHERE published_turns IS NOT NULL")


def downgrade() -> None:
    op.drop_column('sessions', 'polished_turns')
