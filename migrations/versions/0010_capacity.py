"""capacity: parked runs (parked_at, poked), the run holder's worker name; per-job callback secrets

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 07:30:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('durable_runs', sa.Column('parked_at', sa.DateTime(timezone=True), nullable=True))
    op.add_column('durable_runs', sa.Column('poked', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('durable_runs', sa.Column('holder', sa.String(length=120), nullable=True))
    op.create_index('ix_durable_runs_holder', 'durable_runs', ['holder'], unique=False,
                    postgresql_where=sa.text('holder IS NOT NULL'))
    op.add_column('vendor_submissions', sa.Column('callback_secret_sha256', sa.LargeBinary(), nullable=True))
    op.add_column('vendor_submissions', sa.Column('notified_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('vendor_submissions', 'notified_at')
    op.drop_column('vendor_submissions', 'callback_secret_sha256')
    op.drop_index('ix_durable_runs_holder', table_name='durable_runs', postgresql_where=sa.text('holder IS NOT NULL'))
    op.drop_column('durable_runs', 'holder')
    op.drop_column('durable_runs', 'poked')
    op.drop_column('durable_runs', 'parked_at')
