"""audit rows name the clinic, scope and request; detail without patient data

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 11:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('audit_log', sa.Column('clinic_id', sa.UUID(), nullable=True))
    op.add_column('audit_log', sa.Column('scope', sa.String(length=20), nullable=True))
    op.add_column('audit_log', sa.Column('request_id', sa.String(length=64), nullable=True))
    op.add_column('audit_log', sa.Column('detail', postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.create_index(op.f('ix_audit_log_clinic_id'), 'audit_log', ['clinic_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_audit_log_clinic_id'), table_name='audit_log')
    op.drop_column('audit_log', 'detail')
    op.drop_column('audit_log', 'request_id')
    op.drop_column('audit_log', 'scope')
    op.drop_column('audit_log', 'clinic_id')
