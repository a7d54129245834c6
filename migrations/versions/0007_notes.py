"""notes: drafted clinical notes, their versions and citations, templates, batches,
an optional mapping to EHR identifiers;
stable transcript segment ids (in the segments) with a transcript version; signed-note retention;
the trainee co-signature flag

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 14:00:00
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('note_batches',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('therapist_id', sa.UUID(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['therapist_id'], ['therapists.id'], name=op.f('fk_note_batches_therapist_id_therapists')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_note_batches'))
    )
    op.create_table('note_templates',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('clinic_id', sa.UUID(), nullable=False),
    sa.Column('therapist_id', sa.UUID(), nullable=True),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('sections', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['clinic_id'], ['clinics.id'], name=op.f('fk_note_templates_clinic_id_clinics')),
    sa.ForeignKeyConstraint(['therapist_id'], ['therapists.id'], name=op.f('fk_note_templates_therapist_id_therapists')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_note_templates'))
    )
    op.create_index(op.f('ix_note_templates_clinic_id'), 'note_templates', ['clinic_id'], unique=False)
    op.create_table('notes',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('session_id', sa.UUID(), nullable=False),
    sa.Column('clinic_id', sa.UUID(), nullable=False),
    sa.Column('therapist_id', sa.UUID(), nullable=False),
    sa.Column('client_id', sa.String(length=200), nullable=False),
    sa.Column('format', sa.String(length=60), nullable=False),
    sa.Column('template_id', sa.UUID(), nullable=True),
    sa.Column('batch_id', sa.UUID(), nullable=True),
    sa.Column('status', sa.String(length=20), server_default='queued', nullable=False),
    sa.Column('transcript_version', sa.Integer(), nullable=True),
    sa.Column('writer', sa.String(length=120), nullable=True),
    sa.Column('sections', postgresql.JSONB(astext_type=sa.Text()), server_default='[]', nullable=False),
    sa.Column('risk_flags', postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), nullable=True),
    sa.Column('version', sa.Integer(), server_default='0', nullable=False),
    sa.Column('requires_cosign', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('signed_by', sa.UUID(), nullable=True),
    sa.Column('signed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('cosigned_by', sa.UUID(), nullable=True),
    sa.Column('cosigned_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('retain_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('failure_code', sa.String(length=60), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['batch_id'], ['note_batches.id'], name=op.f('fk_notes_batch_id_note_batches')),
    sa.ForeignKeyConstraint(['clinic_id'], ['clinics.id'], name=op.f('fk_notes_clinic_id_clinics')),
    sa.ForeignKeyConstraint(['template_id'], ['note_templates.id'], name=op.f('fk_notes_template_id_note_templates')),
    sa.ForeignKeyConstraint(['therapist_id'], ['therapists.id'], name=op.f('fk_notes_therapist_id_therapists')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notes'))
    )
    op.create_index(op.f('ix_notes_batch_id'), 'notes', ['batch_id'], unique=False)
    op.create_index(op.f('ix_notes_session_id'), 'notes', ['session_id'], unique=False)
    op.create_index('ix_notes_therapist_created', 'notes', ['therapist_id', 'created_at'], unique=False)
    op.create_table('note_citations',
    sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
    sa.Column('note_id', sa.UUID(), nullable=False),
    sa.Column('section', sa.String(length=200), nullable=False),
    sa.Column('sentence', sa.Integer(), nullable=False),
    sa.Column('segment_id', sa.String(length=40), nullable=False),
    sa.Column('speaker', sa.String(length=200), nullable=False),
    sa.Column('start_s', sa.Float(), nullable=False),
    sa.Column('end_s', sa.Float(), nullable=False),
    sa.Column('quote', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['note_id'], ['notes.id'], name=op.f('fk_note_citations_note_id_notes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_note_citations'))
    )
    op.create_index(op.f('ix_note_citations_note_id'), 'note_citations', ['note_id'], unique=False)
    op.create_table('note_versions',
    sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
    sa.Column('note_id', sa.UUID(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('body', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('diff', sa.Text(), server_default='', nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('author_id', sa.UUID(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['note_id'], ['notes.id'], name=op.f('fk_note_versions_note_id_notes')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_note_versions')),
    sa.UniqueConstraint('note_id', 'version', name='uq_note_versions_note_version')
    )
    op.create_table('ehr_identifiers',
    sa.Column('id', sa.BigInteger(), autoincrement=True, nullable=False),
    sa.Column('clinic_id', sa.UUID(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('local_id', sa.String(length=200), nullable=False),
    sa.Column('system', sa.String(length=300), nullable=False),
    sa.Column('value', sa.String(length=200), nullable=False),
    sa.ForeignKeyConstraint(['clinic_id'], ['clinics.id'], name=op.f('fk_ehr_identifiers_clinic_id_clinics')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ehr_identifiers')),
    sa.UniqueConstraint('clinic_id', 'kind', 'local_id', name='uq_ehr_identifiers_local')
    )
    op.add_column('clinics', sa.Column('note_retention_days', sa.Integer(), nullable=True))
    op.add_column('therapists', sa.Column('requires_cosign', sa.Boolean(), server_default=sa.text('false'), nullable=False))
    op.add_column('transcripts', sa.Column('version', sa.Integer(), server_default='1', nullable=False))


def downgrade() -> None:
    op.drop_column('transcripts', 'version')
    op.drop_column('therapists', 'requires_cosign')
    op.drop_column('clinics', 'note_retention_days')
    op.drop_table('ehr_identifiers')
    op.drop_table('note_versions')
    op.drop_index(op.f('ix_note_citations_note_id'), table_name='note_citations')
    op.drop_table('note_citations')
    op.drop_index('ix_notes_therapist_created', table_name='notes')
    op.drop_index(op.f('ix_notes_session_id'), table_name='notes')
    op.drop_index(op.f('ix_notes_batch_id'), table_name='notes')
    op.drop_table('notes')
    op.drop_index(op.f('ix_note_templates_clinic_id'), table_name='note_templates')
    op.drop_table('note_templates')
    op.drop_table('note_batches')
