"""Notes and a client's record as PDF (fpdf2: pure Python, well kept, no system libraries).

Text is set in DejaVu Sans (Latin, Greek, Cyrillic, Hebrew, Arabic, …), embedded and subset per
document, with Droid Sans Fallback for the Chinese, Japanese and Korean characters DejaVu lacks
(added only when a document has them: it is large to parse). Both fonts ship inside the package
(``verbatim/notes/fonts``, licences and NOTICE.md beside them), so every client's name prints as written on
any machine. Each font carries a ToUnicode map: the text extracts as it was written.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path

from fontTools.ttLib import TTFont
from fpdf import FPDF

from verbatim.notes.record import SignedRecord
from verbatim.notes.render import plain_text

FONTS = Path(__file__).with_name("fonts")
_FAMILY, _FALLBACK = "DejaVuSans", "DroidSansFallback"


@lru_cache(maxsize=1)
def _covered() -> frozenset[int]:
    """The code points DejaVu Sans has a glyph for."""
    font = TTFont(FONTS / "DejaVuSans.ttf", lazy=True)
    return frozenset(font.getBestCmap())


def _pdf(text: str) -> FPDF:
    pdf = FPDF(format="A4")
    pdf.add_font(_FAMILY, "", FONTS / "DejaVuSans.ttf")
    pdf.add_font(_FAMILY, "B", FONTS / "DejaVuSans-Bold.ttf")
    covered = _covered()
    if any(ord(c) not in covered for c in text if not c.isspace()):
        pdf.add_font(_FALLBACK, "", FONTS / "DroidSansFallback.ttf")
        pdf.set_fallback_fonts([_FALLBACK], exact_match=False)
    return pdf


def document(title: str, header: list[str], body: str) -> bytes:
    """A PDF with a title, header lines (who, when, status) and the body text (one paragraph per line)."""
    pdf = _pdf("".join([title, *header, body]))
    # Uncompressed: the text stays searchable by archive tools; notes are small.
    pdf.set_compression(False)
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    pdf.set_font(_FAMILY, "B", 14)
    pdf.multi_cell(0, 8, title, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(_FAMILY, "", 9)
    for line in header:
        pdf.multi_cell(0, 5, line, align="L", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font(_FAMILY, "", 10)
    for line in body.splitlines():
        if line == line.upper() and any(c.isupper() for c in line) and not line.startswith(" "):
            pdf.set_font(_FAMILY, "B", 10)
            pdf.multi_cell(0, 6, line, align="L", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font(_FAMILY, "", 10)
        else:
            pdf.multi_cell(0, 5, line or " ", align="L", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _when(record: SignedRecord, at: datetime) -> str:
    return f"{record.local(at):%Y-%m-%d %H:%M %Z}"


def signed_note(record: SignedRecord, *, evidence: bool = False) -> bytes:
    """The PDF of a signed note as an EHR files it: clinician (display name, credentials), clinic, client
    (the EHR's identifier when mapped), date and time of service in the clinic's time zone, session type
    and duration, the note, the signature line(s) with time, and each amendment (what changed, why, by whom).

    No internal ids, segment ids or verifier tags; ``evidence`` adds an appendix naming, for each
    sentence, who said the words it rests on and when in the recording.
    """
    start, end = record.local(record.session_start), record.local(record.session_end)
    # A recording shorter than a minute would read "10:00-10:00, 1 min": its start and its seconds instead.
    short = record.duration_s < 60
    length = f"{round(record.duration_s)} s" if short else f"{round(record.duration_s / 60)} min"
    hours = f"{start:%H:%M}" if short and f"{start:%H:%M}" == f"{end:%H:%M}" else f"{start:%H:%M}-{end:%H:%M}"
    client = f"{record.client.value} ({record.client.system})" if record.ehr_client else record.client.display
    header = [
        f"Clinic: {record.clinic}",
        f"Clinician: {record.clinician.signed_name}",
        f"Client: {client}",
        f"Date of service: {start:%Y-%m-%d}, {hours} {_zone(start, record.time_zone)}",
        f"Session: {record.session_type}, {length}",
        f"Status: {record.status}",
    ]
    lines = [plain_text(record.body, export=True).rstrip(), "", "SIGNATURE",
             f"  Electronically signed by {record.clinician.signed_name} on {_when(record, record.signed_at)}"]
    if record.cosigner is not None and record.cosigned_at is not None:
        lines.append(f"  Co-signed by {record.cosigner.signed_name} (supervisor) on "
                     f"{_when(record, record.cosigned_at)}")
    for change in record.amendments:
        lines += ["", f"AMENDMENT (VERSION {change.version})",
                  f"  Amended by {change.by.signed_name} on {_when(record, change.at)}",
                  f"  Reason: {change.reason}"]
        lines += [f"  Removed from {x}" for x in change.removed] + [f"  Added to {x}" for x in change.added]
        if not change.removed and not change.added:
            lines.append("  No sentence changed.")
    if evidence:
        lines += ["", "APPENDIX: EVIDENCE"]
        for section in record.body.get("sections", []):
            for n, sentence in enumerate(section.get("sentences", []), 1):
                cites = ", ".join(f"{c['speaker']} {_clock(c['start_s'])}-{_clock(c['end_s'])}"
                                  for c in sentence.get("citations", []))
                lines.append(f"  {section['name']} {n}: {cites or 'no words cited'}")
    return document(f"Clinical note ({record.format_name})", header, "\n".join(lines))


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"


def _zone(at: datetime, name: str) -> str:
    """The zone as a reader knows it: ``CST (America/Chicago)``; just ``UTC`` when both say so."""
    abbreviation = f"{at:%Z}"
    return abbreviation if abbreviation == name else f"{abbreviation} ({name})"
