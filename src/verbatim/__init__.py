"""Verbatim: durable capture of therapy session recordings into speaker-labelled transcripts."""
