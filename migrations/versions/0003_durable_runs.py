"""durable runs (runs, fencing token, due time, deadline) apart from sessions; the outbox; sweep schedule

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 10:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('durable_runs',
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('subject_id', sa.UUID(), nullable=False),
    sa.Column('runs', sa.Integer(), server_default='0', nullable=False),
    sa.Column('fence', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('refunded_fence', sa.BigInteger(), nullable=True),
    sa.Column('due_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('deadline_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('kind', 'subject_id', name=op.f('pk_durable_runs'))
    )
    op.create_index('ix_durable_runs_due', 'durable_runs', ['due_at'], unique=False,
                    postgresql_where=sa.text('due_at IS NOT NULL'))
    # Carry the capture runs of existing sessions over; sessions with work outstanding are due now.
    op.execute("""
        INSERT INTO durable_runs (kind, subject_id, runs, fence, due_at, deadline_at)
        SELECT 'capture', id, runs, fence,
               CASE WHEN status IN ('queued', 'recognizing', 'checkpointed', 'publishing') THEN now() END,
               created_at + interval '24 hours'
        FROM sessions
    """)
    op.drop_column('sessions', 'runs')
    op.drop_column('sessions', 'fence')
    # Failed sessions stored the JSON value null: store SQL NULL.
    op.execute("UPDATE sessions SET raw_turns = NULL WHERE raw_turns = 'null'::jsonb")
    op.execute("UPDATE sessions SET published_turns = NULL WHERE published_turns = 'null'::jsonb")

    op.create_table('outbox',
    sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
    sa.Column('kind', sa.String(length=30), nullable=False),
    sa.Column('session_id', sa.UUID(), nullable=True),
    sa.Column('payload', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('delivery_id', sa.UUID(), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('done_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox'))
    )
    op.create_index('ix_outbox_pending', 'outbox', ['next_attempt_at'], unique=False,
                    postgresql_where=sa.text('done_at IS NULL'))
    op.create_index(op.f('ix_outbox_session_id'), 'outbox', ['session_id'], unique=False)

    op.create_table('sweep_schedule',
    sa.Column('name', sa.String(length=40), nullable=False),
    sa.Column('next_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_sweep_schedule'))
    )


def downgrade() -> None:
    op.drop_table('sweep_schedule')
    op.drop_index(op.f('ix_outbox_session_id'), table_name='outbox')
    op.drop_index('ix_outbox_pending', table_name='outbox', postgresql_where=sa.text('done_at IS NULL'))
    op.drop_table('outbox')
    op.add_column('sessions', sa.Column('runs', sa.Integer(), server_default='0', nullable=False))
    op.add_column('sessions', sa.Column('fence', sa.BigInteger(), server_default='0', nullable=False))
    op.execute("""
        UPDATE sessions s SET runs = r.runs, fence = r.fence
        FROM durable_runs r WHERE r.kind = 'capture' AND r.subject_id = s.id
    """)
    op.drop_index('ix_durable_runs_due', table_name='durable_runs', postgresql_where=sa.text('due_at IS NOT NULL'))
    op.drop_table('durable_runs')
