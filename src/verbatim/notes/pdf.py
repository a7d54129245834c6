"""Notes and a client's record as PDF (fpdf2: pure Python, well kept, no system libraries).

Text is set in the core Helvetica font, so characters outside Latin-1 are replaced (``?``);
names and quotes in most Western European languages survive.
"""

from __future__ import annotations

from datetime import datetime

from fpdf import FPDF

from verbatim.notes.record import SignedRecord
from verbatim.notes.render import plain_text


def _latin1(text: str) -> str:
    return (text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
            .replace("\u2013", "-").replace("\u2014", "-").replace("\u21b3", "->")
            .encode("latin-1", "replace").decode("latin-1"))


def document(title: str, header: list[str], body: str) -> bytes:
    """A PDF with a title, header lines (who, when, status) and the body text (one paragraph per line)."""
    pdf = FPDF(format="A4")
    # Uncompressed: the text stays searchable by archive tools (and by our tests); notes are small.
    pdf.set_compression(False)
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.multi_cell(0, 8, _latin1(title), new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 9)
    for line in header:
        pdf.multi_cell(0, 5, _latin1(line), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    pdf.set_font("Helvetica", "", 10)
    for line in body.splitlines():
        if line and line == line.upper() and line.strip():
            pdf.set_font("Helvetica", "B", 10)
            pdf.multi_cell(0, 6, _latin1(line), new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", "", 10)
        else:
            pdf.multi_cell(0, 5, _latin1(line) or " ", new_x="LMARGIN", new_y="NEXT")
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
    minutes = max(1, round(record.duration_s / 60))
    client = f"{record.client.value} ({record.client.system})" if record.ehr_client else record.client.display
    header = [
        f"Clinic: {record.clinic}",
        f"Clinician: {record.clinician.signed_name}",
        f"Client: {client}",
        f"Date of service: {start:%Y-%m-%d}, {start:%H:%M}-{end:%H:%M} {start:%Z} ({record.time_zone})",
        f"Session: {record.session_type}, {minutes} min",
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
        lines += [f"  Removed: {x}" for x in change.removed] + [f"  Added: {x}" for x in change.added]
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
