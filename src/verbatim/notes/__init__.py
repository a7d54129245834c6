"""Clinical notes drafted from a client's transcript record (issue 13; DESIGN.md "The note run").

Modules, one concept each: ``formats`` (SOAP, DAP, BIRP, GIRP, clinic templates), ``text``
(sentences, tokens, negation cues), ``evidence`` (the client's record as citable sentences),
``negations`` (asked-and-answered denials), ``risk`` (risk flags), ``drafter`` (the offline
deterministic writer), ``verifier`` (support labels), ``render`` (plain text and diffs),
``states``, ``repo`` (every database operation of notes), ``run`` (the note run: the second
kind of durable run), ``fhir`` and ``pdf`` (exports of signed notes).
"""
