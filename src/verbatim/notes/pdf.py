"""Notes and a client's record as PDF (fpdf2: pure Python, well kept, no system libraries).

Text is set in the core Helvetica font, so characters outside Latin-1 are replaced (``?``);
names and quotes in most Western European languages survive.
"""

from __future__ import annotations

from fpdf import FPDF


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
