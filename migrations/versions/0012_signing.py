"""signing: a trainee's named supervisor, a therapist's display name and credentials, a clinic's time zone

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 13:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('therapists', sa.Column('supervisor_id', postgresql.UUID(as_uuid=True), nullable=True))
    op.create_foreign_key('fk_therapists_supervisor', 'therapists', 'therapists', ['supervisor_id'], ['id'])
    op.add_column('therapists', sa.Column('display_name', sa.String(length=200), nullable=True))
    op.add_column('therapists', sa.Column('credentials', sa.String(length=100), nullable=True))
    op.add_column('clinics', sa.Column('time_zone', sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column('clinics', 'time_zone')
    op.drop_column('therapists', 'credentials')
    op.drop_column('therapists', 'display_name')
    op.drop_constraint('fk_therapists_supervisor', 'therapists', type_='foreignkey')
    op.drop_column('therapists', 'supervisor_id')
