"""reliability analysis: requests ledger, suggestions, append-only actions

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


# Suggestion reviews are an audit trail: immutable in the database itself, not only in code.
# Any UPDATE, DELETE or TRUNCATE of reliability_actions raises, whoever issues it.
ACTIONS_APPEND_ONLY = """
CREATE FUNCTION reliability_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reliability_actions is append-only: % refused', TG_OP;
END $$;
CREATE TRIGGER reliability_actions_no_update_delete BEFORE UPDATE OR DELETE ON reliability_actions
    FOR EACH ROW EXECUTE FUNCTION reliability_actions_append_only();
CREATE TRIGGER reliability_actions_no_truncate BEFORE TRUNCATE ON reliability_actions
    FOR EACH STATEMENT EXECUTE FUNCTION reliability_actions_append_only();
"""


def upgrade() -> None:
    op.create_table('reliability_actions',
    sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
    sa.Column('suggestion_id', sa.UUID(), nullable=False),
    sa.Column('session_id', sa.UUID(), nullable=False),
    sa.Column('action', sa.String(length=20), nullable=False),
    sa.Column('from_status', sa.String(length=20), nullable=True),
    sa.Column('to_status', sa.String(length=20), nullable=False),
    sa.Column('actor', sa.String(length=20), nullable=False),
    sa.Column('therapist_id', sa.UUID(), nullable=True),
    sa.Column('token_id', sa.UUID(), nullable=True),
    sa.Column('at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_reliability_actions'))
    )
    op.create_index(op.f('ix_reliability_actions_session_id'), 'reliability_actions', ['session_id'], unique=False)
    op.create_index(op.f('ix_reliability_actions_suggestion_id'), 'reliability_actions', ['suggestion_id'],
                    unique=False)
    op.create_table('reliability_analyses',
    sa.Column('session_id', sa.UUID(), nullable=False),
    sa.Column('requested_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('emitted_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('dead_lettered_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'],
                            name=op.f('fk_reliability_analyses_session_id_sessions')),
    sa.PrimaryKeyConstraint('session_id', name=op.f('pk_reliability_analyses'))
    )
    op.create_index('ix_reliability_analyses_unfinished', 'reliability_analyses', ['requested_at'], unique=False,
                    postgresql_where=sa.text('completed_at IS NULL'))
    op.create_table('reliability_suggestions',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('session_id', sa.UUID(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.String(length=40), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('turn_index', sa.Integer(), nullable=False),
    sa.Column('word_index', sa.Integer(), nullable=True),
    sa.Column('start_s', sa.Float(), nullable=False),
    sa.Column('end_s', sa.Float(), nullable=False),
    sa.Column('original', sa.Text(), nullable=False),
    sa.Column('suggested', sa.Text(), nullable=True),
    sa.Column('alternatives', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'[]'::jsonb"),
              nullable=False),
    sa.Column('confidence', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('word', 'speaker', 'edit')", name=op.f('ck_reliability_suggestions_kind')),
    sa.CheckConstraint("status IN ('pending', 'validated', 'auto_applied', 'ignored')",
                       name=op.f('ck_reliability_suggestions_status')),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'],
                            name=op.f('fk_reliability_suggestions_session_id_sessions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_reliability_suggestions'))
    )
    op.create_index('ix_reliability_suggestions_session_turn', 'reliability_suggestions',
                    ['session_id', 'turn_index'], unique=False)
    op.execute(ACTIONS_APPEND_ONLY)


def downgrade() -> None:
    op.drop_index('ix_reliability_suggestions_session_turn', table_name='reliability_suggestions')
    op.drop_table('reliability_suggestions')
    op.drop_index('ix_reliability_analyses_unfinished', table_name='reliability_analyses',
                  postgresql_where=sa.text('completed_at IS NULL'))
    op.drop_table('reliability_analyses')
    # DROP TABLE is neither UPDATE, DELETE nor TRUNCATE: the trigger lets a downgrade through.
    op.execute("DROP TABLE reliability_actions CASCADE")
    op.execute("DROP FUNCTION reliability_actions_append_only()")
