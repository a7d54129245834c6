"""break-glass grants: a colleague's time-limited, reasoned, audited access to one session

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 12:00:00
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('break_glass_grants',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('session_id', sa.UUID(), nullable=False),
    sa.Column('clinic_id', sa.UUID(), nullable=False),
    sa.Column('token_id', sa.UUID(), nullable=False),
    sa.Column('therapist_id', sa.UUID(), nullable=True),
    sa.Column('scope', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], name=op.f('fk_break_glass_grants_session_id_sessions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_break_glass_grants'))
    )
    op.create_index(op.f('ix_break_glass_grants_session_id'), 'break_glass_grants', ['session_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_break_glass_grants_session_id'), table_name='break_glass_grants')
    op.drop_table('break_glass_grants')
