"""Compositional risk frames: risk said in words no phrase list can foresee.

``risk_lexicon.ENTRIES`` lists phrases ("wish I was dead"); a frame here is a grammatical shape
built from word slots, so one frame covers many wordings never written down:

- **not existing**: a wish or not-minding verb + a state of not being ("I kind of want to just not
  exist", "I wouldn't mind if I just didn't wake up", "hope I don't make it to morning");
- **no future**: the client not being around in the future ("can't picture myself still being
  here in a year", "he won't have to deal with me for much longer");
- **others without me**: other people managing without the client ("everybody would manage fine
  without me around");
- **means**: a method noun (pills, a gun, a rope, a hose, a height) near a keeping, getting,
  counting or looking verb and a purpose cue ("kept back some of my sleeping tablets instead of
  taking them", "how much of the insulin it would take", "stood there looking over");
- **body harm**: an injuring verb or an instrument + the client's body + a deliberate cue or a
  relapse ("took a blade to my wrists", "slipped up again and cut");
- **harm to others**: separable and directional harm verbs with a person object ("shove my sister
  down the stairs", "running him off the road", "waiting for him … with a bat");
- **abuse**: an agent + a violence verb + the client, with a handle ("by my hair"), an
  instrument ("take his belt to us"), or control of money;
- **neglect**: basic needs missing in a child's or dependant's life ("never had clean clothes",
  "left to fend for ourselves").

**Concept frames** (the last section of the table) are written over ``[classes]``: synonym sets
of a frame's verbs and objects (a wish, not being, an injuring verb, a violent act in the passive,
a carer's duty left undone), each word matched in all its inflections
(``risk_lexicon.word_class``), so a synonym or a tense no pattern lists is still read; an
``unless`` context (an accident, a match result) cancels a frame for the sentence.

The frames are data, in ``risk_frames.toml`` (its ``[slots]`` may use the lexicon's and the
``[classes]``), read as ``risk_lexicon.toml`` is. The negation, speaker, hypothetical and look-alike logic of
``verbatim.notes.risk`` applies to frames exactly as to lexicon entries. Frames are written
from the tuning set's wording classes, never from a held-out set (the second pass of session 31
read ``risk_holdout10``'s misses as development data and wrote mechanisms, not its phrases).
"""

from __future__ import annotations

from verbatim.notes.risk_lexicon import SLOTS, Entry, entries, load, with_classes, with_slots

_TABLE = load("risk_frames.toml")
#: the word classes (``[classes]``: synonym sets, every word in all its inflections), then the slots
CLASSES = with_classes(_TABLE.get("classes", {}), SLOTS)
FRAMES: list[Entry] = entries(_TABLE["frame"], with_slots(_TABLE["slots"], CLASSES))
