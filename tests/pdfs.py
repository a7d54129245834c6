"""Reading an exported PDF's text back as a reader would (pypdf, through the embedded fonts' ToUnicode maps)."""

from __future__ import annotations

import io

from pypdf import PdfReader


def text_of(pdf: bytes) -> str:
    """Every page's text, whitespace (and so line wrapping) made single spaces."""
    return " ".join(" ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages).split())
