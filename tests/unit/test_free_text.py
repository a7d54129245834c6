"""The one rule for free text (``verbatim.free_text``), on the request models that use it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verbatim.api.break_glass import BreakGlassIn
from verbatim.api.notes import Amendment, NoteEdit, TemplateIn
from verbatim.api.segments import SegmentCorrection
from verbatim.free_text import check, check_reason, problem

SECTION = {"name": "Subjective", "sentences": ["Sleep is poor."]}


@pytest.mark.parametrize("bad", ["\x00", "\x1b", "\x07", "\x7f", "\x85", "\x9b", "\u202e", "\u2066", "\u200b",
                                 "\u200d", "\ufeff", "\u00ad", "\u061c", "\ud800",
                                 # shown as nothing, though not format characters (a fresh-clone breaking run)
                                 "\u3164", "\u115f", "\u2800", "\u034f", "\ufe0f", "\u2028"])
def test_every_refused_character_is_named_by_code_point_and_the_text_never_quoted(bad: str) -> None:
    why = problem(f"no risk of harm{bad} to self")
    assert why is not None and f"U+{ord(bad):04X}" in why and "character 16" in why
    assert "harm" not in why
    with pytest.raises(ValidationError):
        NoteEdit(sections=[{"name": "Risk", "sentences": [f"No risk of harm{bad} to self."]}])


def test_tab_newline_and_every_script_pass_and_carriage_returns_fold() -> None:
    assert check("Plan:\tsleep diary\r\nreview in two weeks\rend") == "Plan:\tsleep diary\nreview in two weeks\nend"
    assert check("Müde, 眠れない, не спит, لا ينام, 😴") == "Müde, 眠れない, не спит, لا ينام, 😴"


def test_a_reason_needs_readable_words() -> None:
    for empty in ["\u200b" * 8, "\u202a\u202b\u202c\u202d\u202e" * 2, "!!!!!!!!!!!!", "1234567890", "a.b.c......",
                  "\u3164" * 12, "aaaa\u034f\u034f"]:
        with pytest.raises(ValueError):
            check_reason(empty)
        with pytest.raises(ValidationError):
            BreakGlassIn(reason=empty)
        with pytest.raises(ValidationError):
            Amendment(sections=[SECTION], reason=empty)
    assert BreakGlassIn(reason="Client in crisis; therapist away").reason
    assert Amendment(sections=[SECTION], reason="Typo fixed").reason == "Typo fixed"


def test_names_are_one_line_and_every_model_refuses_controls() -> None:
    with pytest.raises(ValidationError):
        NoteEdit(sections=[{"name": "Plan\nInjected", "sentences": ["x"]}])
    with pytest.raises(ValidationError):
        TemplateIn(name="Intake", sections=[{"name": "Summary", "instruction": "Summarise\x00"}])
    with pytest.raises(ValidationError):
        TemplateIn(name="Intake", sections=[{"name": "Summary", "instruction": "Summarise", "example": "x\x1b[2J"}])
    with pytest.raises(ValidationError):
        SegmentCorrection(text="Honestly, not great.", client_id="client\u200b")
    assert SegmentCorrection(text="  Honestly,\nnot great.  ").text == "Honestly,\nnot great."


def test_two_sections_of_one_name_are_refused() -> None:
    with pytest.raises(ValidationError, match="same name"):
        NoteEdit(sections=[{"name": "Plan", "sentences": ["Meet next week."]},
                           {"name": "plan", "sentences": ["Client threatened to burn down the house."]}])
