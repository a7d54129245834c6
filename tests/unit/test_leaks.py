"""The end-of-run scan for patient words in logs (``tests/leaks.py``) finds what it must, and only that."""

from __future__ import annotations

import json
from pathlib import Path

from tests.leaks import leaks, patient_texts, phrases


def test_the_phrases_come_from_the_samples_notes_and_the_hostile_table() -> None:
    known = phrases()
    assert ("i", "fall", "asleep", "around", "one") in known  # samples/therapy_dialogue.json
    assert ("ask", "not", "what", "your", "country") in known  # samples/jfk.txt
    assert ("covering", "for", "a", "colleague", "today") in known  # a break-glass reason of the table
    assert len(patient_texts()) > 50


def test_a_log_line_quoting_a_transcript_is_a_leak_and_ordinary_lines_are_not(tmp_path: Path) -> None:
    clean = tmp_path / "api.log"
    clean.write_text("\n".join(json.dumps(line) for line in [
        {"event": "fault_answered", "status": 422, "error": "value_refused", "path": "/v1/notes/x"},
        {"event": "upload_stored", "bytes": 351244, "session": "5b1c…"},
        "INFO:     127.0.0.1:5000 - \"PUT /v1/notes/x HTTP/1.1\" 422 Unprocessable Entity",
    ]) + "\n")
    assert leaks([tmp_path]) == []
    (tmp_path / "workers").mkdir()
    leaked = tmp_path / "workers" / "worker-1.log"
    # What uvicorn logged before the engine hid its parameters (issue 24 item 1).
    leaked.write_text("ok\nsqlalchemy.exc.DataError: (psycopg.DataError) PostgreSQL text fields cannot contain NUL "
                      "[parameters: ('Honestly, not great. I fall asleep around one in the morning',)]\n")
    try:
        found = leaks([tmp_path])
        assert len(found) == 1 and "worker-1.log:2:" in found[0]
        (tmp_path / "transcript.json").write_text("I fall asleep around one in the morning")  # not a log: not scanned
        assert len(leaks([tmp_path])) == 1
    finally:
        leaked.unlink()  # the planted leak must not fail the end-of-run scan of pytest's own temporary folders
