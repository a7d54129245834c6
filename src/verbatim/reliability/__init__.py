"""Transcript reliability analysis, event-driven on Redis Streams (issue 7).

Publish emits ``reliability.analysis.requested`` on the ``reliability:events`` stream;
``verbatim analysis-worker`` processes consume it in the ``reliability`` consumer group,
turn doubtful words, doubtful speaker attributions and the polish pass's edits into
suggestions a clinician reviews, and record every review in an append-only table.

Modules: ``settings`` (RELIABILITY_* env vars), ``streams`` (every Redis key and stream
operation, the retry policy), ``lock`` (per-transcript lock), ``analysis`` (pure
functions over speaker turns), ``suggestions`` (the state machine and the published
transcript it implies), ``models`` (tables), ``worker`` (the consumer process),
``sweep`` (re-emits what PostgreSQL says was never analysed), ``api`` (HTTP endpoints).
"""
