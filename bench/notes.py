"""Benchmark the offline note drafter on the 20 aci-bench ``valid`` dialogues; prints figures, asserts nothing.

Run from the repository root: ``.venv/bin/python bench/notes.py``.

Data: ACI-BENCH (Yim et al., Scientific Data 10, 586, 2023; CC BY 4.0), ../shared/data/notes/aci-bench.
``[doctor]`` lines are read as the clinician's, ``[patient]`` lines as the client's; the
built-in ``aci`` template mirrors the reference notes' sections (CHIEF COMPLAINT … ASSESSMENT
AND PLAN). In one run, on the same 20 dialogues:

* ROUGE-1/2/L F-measure in points (0–100, ``rouge-score`` with stemming) of the drafts against
  the reference notes, and of the baseline: the transcript copied as the note (published on the
  test set: 32.84 ROUGE-1; GPT-4 51.76);
* the share of drafted sentences with at least one citation, and the share the verifier labels
  supported;
* the share of the draft's words inside a verbatim copy of the transcript (5-word n-grams);
* the verifier's own quality: corrupted copies of drafted sentences (a negation flipped, a
  number changed, a sentence from another dialogue), each with the original's citations — the
  share it flags (unsupported or contradicted) is its recall; the share of untouched sentences
  it flags is its false-flag rate;
* seconds per note.

The last line is one JSON object with the headline figures.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from rouge_score import rouge_scorer

from verbatim.notes import text as tx
from verbatim.notes import verifier
from verbatim.notes.drafter import Names, OfflineDrafter
from verbatim.notes.evidence import units
from verbatim.notes.formats import sections_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "notes" / "aci-bench" / "valid.json"
PUBLISHED = {"transcript_copy_rouge1": 32.84, "gpt4_rouge1": 51.76, "gpt4_rouge2": 22.58, "gpt4_rougeL": 45.97}
_LINE = re.compile(r"^\[(doctor|patient)\]\s*(.*)$")


def segments(src: str) -> list[dict[str, Any]]:
    """The dialogue as a client's record: the doctor as the clinician, the patient as client ``patient``."""
    out = []
    for n, line in enumerate(x for x in src.splitlines() if x.strip()):
        match = _LINE.match(line.strip())
        if match is None:
            continue
        who, said = match.groups()
        out.append({"id": f"seg-{n}", "speaker": "therapist" if who == "doctor" else "patient",
                    "start_s": 5.0 * n, "end_s": 5.0 * n + 4.5, "text": tx.tidy(said)})
    return out


def note_text(sections: list[dict[str, Any]]) -> str:
    parts = []
    for s in sections:
        parts.append(s["name"])
        parts.extend(x["text"] for x in s["sentences"])
    return "\n".join(parts)


def verbatim_share(draft: str, transcript: str, n: int = 5) -> float:
    words = tx.words(draft)
    source = tx.words(transcript)
    grams = {tuple(source[i:i + n]) for i in range(len(source) - n + 1)}
    covered = [False] * len(words)
    for i in range(len(words) - n + 1):
        if tuple(words[i:i + n]) in grams:
            for k in range(i, i + n):
                covered[k] = True
    return sum(covered) / len(words) if words else 0.0


_FLIPS = [(r"\bdon't\b", "do"), (r"\bdoesn't\b", "does"), (r"\bdidn't\b", "did"), (r"\bisn't\b", "is"),
          (r"\bwasn't\b", "was"), (r"\bcan't\b", "can"), (r"\bwon't\b", "will"), (r"\bhaven't\b", "have"),
          (r"\bnever\s+", ""), (r"\bnot\s+", ""), (r"\bno\s+", ""), (r"\bdenies\b", "reports")]
_AUX = re.compile(r"\b(is|are|was|were|has|have|had|will|can|does|do|did|should|would)\b")
_NUM = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|fifty|hundred)\b")


def flip_negation(sentence: str) -> str | None:
    for pattern, repl in _FLIPS:
        if re.search(pattern, sentence, re.I):
            return re.sub(pattern, repl, sentence, count=1, flags=re.I)
    match = _AUX.search(sentence)
    if match:
        return sentence[:match.end()] + " not" + sentence[match.end():]
    return None


def change_number(sentence: str) -> str | None:
    match = _NUM.search(sentence)
    if match is None:
        return None
    value = match.group(1)
    new = str(int(value) + 3) if value.isdigit() else {"one": "four", "two": "six", "three": "seven", "four": "nine",
                                                          "five": "eight", "six": "two", "seven": "three",
                                                          "eight": "five", "nine": "one", "ten": "fifteen"}.get(
        value.lower(), "eleven")
    return sentence[:match.start()] + new + sentence[match.end():]


def main() -> None:
    data = json.loads(DATA.read_text())["data"]
    drafter = OfflineDrafter(Names("Doctor", "Patient"), per_section=8)
    sections = sections_of("aci")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    draft_scores: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeL": []}
    copy_scores: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeL": []}
    sentences: list[tuple[int, dict[str, Any]]] = []
    verbatim: list[float] = []
    seconds = 0.0
    for i, item in enumerate(data):
        segs = segments(item["src"])
        transcript = "\n".join(s["text"] for s in segs)
        started = time.perf_counter()
        note = drafter.draft(sections, units(segs, "patient"))
        seconds += time.perf_counter() - started
        draft = note_text(note)
        for name, score in scorer.score(item["tgt"], draft).items():
            draft_scores[name].append(100 * score.fmeasure)
        for name, score in scorer.score(item["tgt"], transcript).items():
            copy_scores[name].append(100 * score.fmeasure)
        verbatim.append(verbatim_share(draft, transcript))
        sentences += [(i, x) for s in note for x in s["sentences"]]

    cited = sum(bool(x["citations"]) for _, x in sentences) / len(sentences)
    supported = sum(x["label"] == verifier.SUPPORTED for _, x in sentences) / len(sentences)

    # The verifier's own quality: corrupted copies keep the original's citations.
    corrupted: list[tuple[str, str, list[str]]] = []
    for k, (i, x) in enumerate(sentences):
        if x["label"] != verifier.SUPPORTED:
            continue
        quotes = [c["quote"] for c in x["citations"]]
        for kind, fn in (("negation", flip_negation), ("number", change_number)):
            bad = fn(x["text"])
            if bad and bad != x["text"]:
                corrupted.append((kind, bad, quotes))
        other = next(y for j, y in sentences[k + 1:] + sentences[:k] if j != i)
        corrupted.append(("other_dialogue", other["text"], quotes))
    flagged: dict[str, list[bool]] = {}
    for kind, bad, quotes in corrupted:
        flagged.setdefault(kind, []).append(verifier.label(bad, quotes).label != verifier.SUPPORTED)
    recall = sum(sum(v) for v in flagged.values()) / sum(len(v) for v in flagged.values())
    false_flag = 1 - supported  # every drafted sentence is untouched: flagged ones are false flags

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    r1, r2, rl = (mean(draft_scores[k]) for k in ("rouge1", "rouge2", "rougeL"))
    c1, c2, cl = (mean(copy_scores[k]) for k in ("rouge1", "rouge2", "rougeL"))
    print(f"aci-bench valid: {len(data)} dialogues, {len(sentences)} drafted sentences "
          f"(ACI-BENCH, Yim et al. 2023, CC BY 4.0)")
    print(f"ROUGE-1/2/L (points)  offline drafter: {r1:.2f} / {r2:.2f} / {rl:.2f}")
    print(f"                      transcript copy: {c1:.2f} / {c2:.2f} / {cl:.2f}  "
          f"(published on test: {PUBLISHED['transcript_copy_rouge1']} ROUGE-1)")
    print(f"                      drafter − copy:  {r1 - c1:+.2f} ROUGE-1; ratio {r1 / c1:.2f}x")
    print(f"                      GPT-4 (published, test): {PUBLISHED['gpt4_rouge1']} / {PUBLISHED['gpt4_rouge2']} / "
          f"{PUBLISHED['gpt4_rougeL']} → the drafter is {PUBLISHED['gpt4_rouge1'] - r1:.1f} ROUGE-1 points behind")
    print(f"cited sentences: {cited:.3f}   supported by the verifier: {supported:.3f}   "
          f"verbatim 5-gram share: {mean(verbatim):.3f}")
    for kind, flags in sorted(flagged.items()):
        print(f"verifier on {kind:>14}: flagged {sum(flags)}/{len(flags)} = {sum(flags) / len(flags):.3f}")
    print(f"verifier recall {recall:.3f} on {len(corrupted)} corrupted sentences; false flags {false_flag:.3f}")
    print(f"seconds per note: {seconds / len(data):.4f}")
    print(json.dumps({
        "rouge1": round(r1, 2), "rouge2": round(r2, 2), "rougeL": round(rl, 2),
        "rouge1_transcript_copy": round(c1, 2), "cited_share": round(cited, 3),
        "supported_share": round(supported, 3), "verbatim_share": round(mean(verbatim), 3),
        "verifier_recall": round(recall, 3), "verifier_false_flag": round(false_flag, 3),
        "corrupted": len(corrupted), "s_per_note": round(seconds / len(data), 4),
    }))


if __name__ == "__main__":
    sys.exit(main())
