"""Benchmark the offline note drafter on aci-bench dialogues; prints figures, asserts nothing.

Run from the repository root: ``.venv/bin/python bench/notes.py [--data FILE]``.

Data (``--data``): a JSON file ``{"data": [{"src": dialogue, "tgt": reference note, "file"?: name}]}``,
``src`` one turn a line tagged ``[doctor]``, ``[patient]`` or another participant
(``[patient_guest]``, …). Default: ACI-BENCH's ``valid.json`` (Yim et al., Scientific Data 10,
586, 2023; CC BY 4.0), found as ``shared/data/notes/aci-bench/valid.json`` beside or above the
checkout. ``[doctor]`` lines are the clinician's, ``[patient]`` lines the client's; any other
tag is another participant's (never the patient's words; it leaves a gap so an answer is never
attributed across it). The built-in ``aci`` template mirrors the reference notes' sections
(CHIEF COMPLAINT … ASSESSMENT AND PLAN). In one run, on the same dialogues:

* ROUGE as the benchmark's paper reports it: ``rouge-score`` without stemming, ROUGE-1/2 and
  ROUGE-Lsum (sentences one a line), the mean of per-note F-measures × 100 — of the drafts, and
  of the paper's baseline, the raw ``src`` copied as the note, speaker tags included (32.84
  ROUGE-1 on the paper's test set; 34.18 on valid). Beside them, the stemmed ROUGE-1/2/L this
  bench reported before (``rouge1``, ``rouge2``, ``rougeL``: copy without tags);
* ``cited_share`` (fixed statements excluded), ``supported_share``, ``contradicted_emitted``
  (sentences the drafter's own verifier calls contradicted: should be 0), and
  ``chief_complaint_share`` (drafts with a filled CHIEF COMPLAINT, among dialogues whose
  reference note has one);
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

import argparse
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

PUBLISHED = {"transcript_copy_rouge1": 32.84, "bart_large_rouge1": 41.76, "gpt4_rouge1": 51.76,
             "gpt4_rouge2": 22.58, "gpt4_rougeL": 45.97}
_LINE = re.compile(r"^\[([a-z_]+)\]\s*(.*)$")
_COMPLAINT_REF = re.compile(r"^\s*(CHIEF COMPLAINT|CC:)", re.M)


def default_data() -> Path:
    """``shared/data/notes/aci-bench/valid.json`` in the nearest folder above the checkout that has it."""
    here = Path(__file__).resolve().parent
    for folder in here.parents:
        candidate = folder / "shared" / "data" / "notes" / "aci-bench" / "valid.json"
        if candidate.exists():
            return candidate
    return here.parents[1] / "shared" / "data" / "notes" / "aci-bench" / "valid.json"


def segments(src: str) -> list[dict[str, Any]]:
    """The dialogue as a client's record: the doctor as the clinician, the patient as client ``patient``,
    anyone else (``[patient_guest]``, …) as another participant (kept, so their turn leaves a gap)."""
    out = []
    for n, line in enumerate(x for x in src.splitlines() if x.strip()):
        match = _LINE.match(line.strip())
        if match is None:
            continue
        who, said = match.groups()
        speaker = {"doctor": "therapist", "patient": "patient"}.get(who, "other participant")
        out.append({"id": f"seg-{n}", "speaker": speaker, "start_s": 5.0 * n, "end_s": 5.0 * n + 4.5,
                    "text": tx.tidy(said)})
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="dialogues and reference notes (valid.json layout)")
    args = parser.parse_args(argv)
    path = args.data or default_data()
    data = json.loads(path.read_text())["data"]
    drafter = OfflineDrafter(Names("Doctor", "Patient"), per_section=8)
    sections = sections_of("aci")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    paper = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=False)
    draft_scores: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeL": []}
    copy_scores: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeL": []}
    paper_scores: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeLsum": []}
    paper_copy: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeLsum": []}
    sentences: list[tuple[int, dict[str, Any]]] = []
    verbatim: list[float] = []
    complaint_wanted = complaint_filled = 0
    seconds = 0.0
    for i, item in enumerate(data):
        segs = segments(item["src"])
        transcript = "\n".join(s["text"] for s in segs if s["speaker"] in ("therapist", "patient"))
        started = time.perf_counter()
        note = drafter.draft(sections, units(segs, "patient"))
        seconds += time.perf_counter() - started
        draft = note_text(note)
        for name, score in scorer.score(item["tgt"], draft).items():
            draft_scores[name].append(100 * score.fmeasure)
        for name, score in scorer.score(item["tgt"], transcript).items():
            copy_scores[name].append(100 * score.fmeasure)
        for name, score in paper.score(item["tgt"], draft).items():
            paper_scores[name].append(100 * score.fmeasure)
        for name, score in paper.score(item["tgt"], item["src"]).items():
            paper_copy[name].append(100 * score.fmeasure)
        if _COMPLAINT_REF.search(item["tgt"]):
            complaint_wanted += 1
            complaint_filled += any(s["name"] == "CHIEF COMPLAINT" and s["sentences"] for s in note)
        verbatim.append(verbatim_share(draft, transcript))
        sentences += [(i, x) for s in note for x in s["sentences"]]

    # Fixed statements (none is drafted today; a risk-check line would be one) are not evidence claims.
    claims = [x for _, x in sentences if not x.get("fixed")]
    cited = sum(bool(x["citations"]) for x in claims) / len(claims)
    supported = sum(x["label"] == verifier.SUPPORTED for x in claims) / len(claims)
    contradicted = sum(x["label"] == verifier.CONTRADICTED for x in claims)
    complaint = complaint_filled / complaint_wanted if complaint_wanted else 0.0

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
    p1, p2, pl = (mean(paper_scores[k]) for k in ("rouge1", "rouge2", "rougeLsum"))
    q1, q2, ql = (mean(paper_copy[k]) for k in ("rouge1", "rouge2", "rougeLsum"))
    print(f"{path.name}: {len(data)} dialogues, {len(sentences)} drafted sentences "
          f"(default set: ACI-BENCH, Yim et al. 2023, CC BY 4.0)")
    print("ROUGE as the paper (no stemming, mean per-note F x 100), ROUGE-1/2/Lsum:")
    print(f"                      offline drafter: {p1:.2f} / {p2:.2f} / {pl:.2f}")
    print(f"        transcript copy (src as is):   {q1:.2f} / {q2:.2f} / {ql:.2f}  "
          f"(paper, test: {PUBLISHED['transcript_copy_rouge1']} ROUGE-1)")
    print(f"                      drafter - copy:  {p1 - q1:+.2f} ROUGE-1; ratio {p1 / q1:.2f}x; "
          f"BART-large fine-tuned (paper, test): {PUBLISHED['bart_large_rouge1']} ROUGE-1")
    print(f"chief complaint filled: {complaint_filled}/{complaint_wanted} = {complaint:.3f}   "
          f"contradicted sentences emitted: {contradicted}")
    print("ROUGE-1/2/L stemmed (this bench's earlier figures):")
    print(f"                      offline drafter: {r1:.2f} / {r2:.2f} / {rl:.2f}")
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
        "rouge1_paper": round(p1, 2), "rouge2_paper": round(p2, 2), "rougeLsum_paper": round(pl, 2),
        "rouge1_transcript_copy_paper": round(q1, 2), "rouge2_transcript_copy_paper": round(q2, 2),
        "rougeLsum_transcript_copy_paper": round(ql, 2), "contradicted_emitted": contradicted,
        "chief_complaint_share": round(complaint, 3), "dialogues": len(data), "sentences": len(claims),
        "rouge1": round(r1, 2), "rouge2": round(r2, 2), "rougeL": round(rl, 2),
        "rouge1_transcript_copy": round(c1, 2), "cited_share": round(cited, 3),
        "supported_share": round(supported, 3), "verbatim_share": round(mean(verbatim), 3),
        "verifier_recall": round(recall, 3), "verifier_false_flag": round(false_flag, 3),
        "corrupted": len(corrupted), "s_per_note": round(seconds / len(data), 4),
    }))


if __name__ == "__main__":
    sys.exit(main())
