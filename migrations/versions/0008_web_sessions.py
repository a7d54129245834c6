"""web sessions: cookie sessions of the clinicians' pages and one-time sign-in links

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 07:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'web_sessions',
        sa.Column('id_hash', sa.String(length=64), nullable=False),
        sa.Column('token_id', postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column('csrf_token', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('last_seen_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name='fk_web_sessions_token_id_api_tokens'),
        sa.PrimaryKeyConstraint('id_hash', name='pk_web_sessions'),
    )
    op.create_index('ix_web_sessions_token_id', 'web_sessions', ['token_id'])
    op.create_table(
        'web_sign_in_links',
        sa.Column('code_hash', sa.String(length=64), nullable=False),
        sa.Column('token_id', postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('used_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name='fk_web_sign_in_links_token_id_api_tokens'),
        sa.PrimaryKeyConstraint('code_hash', name='pk_web_sign_in_links'),
    )


def downgrade() -> None:
    op.drop_table('web_sign_in_links')
    op.drop_index('ix_web_sessions_token_id', table_name='web_sessions')
    op.drop_table('web_sessions')
