"""How a client's record shows turns that are not the client's: another participant's, and a voice nobody named."""

from __future__ import annotations

from verbatim.polish.split import PLACEHOLDER
from verbatim.web.session_page import NOT_YET_NAMED, _lines


def _seg(speaker: str, label: str, text: str) -> dict[str, object]:
    return {"speaker": speaker, "speaker_label": label, "start_s": 0.0, "end_s": 1.0, "text": text}


def test_a_turn_of_an_unnamed_voice_says_so_in_place_and_another_participants_stays_a_placeholder() -> None:
    segments = [_seg("alex", "S1", "I slept badly."), _seg("other participant", "S2", PLACEHOLDER),
                _seg("other participant", "S3", PLACEHOLDER)]
    lines = _lines(segments, [0, 1, 2], {}, None, frozenset({"S3"}))
    assert [x.speaker for x in lines] == ["alex", "Other participant", "Unassigned speaker S3"]
    assert [x.parts[0].text for x in lines] == ["I slept badly.", PLACEHOLDER, NOT_YET_NAMED]
