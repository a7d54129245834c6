"""The note status the sessions list shows, and the versions' diffs as the note page lays them out."""

from __future__ import annotations

import pytest

from verbatim.notes.render import diff
from verbatim.web.notes_page import _diff_lines
from verbatim.web.session_list import NOTE_WORDS, note_status


@pytest.mark.parametrize(("status", "stale", "amended", "shown"), [
    (None, False, False, "none"),
    ("queued", False, False, "drafting"),
    ("drafting", True, False, "drafting"),
    ("draft", False, False, "draft"),
    ("draft", True, False, "stale"),
    ("signed", False, False, "signed"),
    ("signed", True, True, "amended"),
    ("failed", False, False, "failed"),
])
def test_note_status_is_derived_from_the_note(status: str | None, stale: bool, amended: bool, shown: str) -> None:
    assert note_status(status, stale=stale, amended=amended) == shown
    assert shown in NOTE_WORDS


def test_a_diff_is_laid_out_as_added_removed_and_kept_lines() -> None:
    before = "Plan\nClient will rest.\nClient walks daily.\n"
    after = "Plan\nClient will rest.\nClient walks each morning.\n"
    lines = _diff_lines(diff(before, after, 1, 2))
    kinds = [k for k, _ in lines]
    assert ("del", "-Client walks daily.") in lines
    assert ("add", "+Client walks each morning.") in lines
    assert kinds[0] == "hunk" and "same" in kinds
    assert not any(line.startswith(("---", "+++")) for _, line in lines)  # file headers dropped
    assert _diff_lines("") == []


def test_a_versions_diff_says_verifier_tags_in_words() -> None:
    lines = _diff_lines("--- v1\n+++ v2\n@@ -1 +1 @@\n-Client slept well.\n"
                        "+Client slept well every night. [UNSUPPORTED]")
    assert lines[-1] == ("add", "+Client slept well every night. (⚠ unsupported: the cited words do not say this)")
    assert all("[UNSUPPORTED]" not in line for _, line in lines)
