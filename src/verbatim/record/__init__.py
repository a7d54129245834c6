"""The published record: the transcript per client that clinicians read, correct and sign notes from.

One module writes it (``verbatim.record.writer``); ``verbatim.record.build`` is the pure
function every write rebuilds it with. See DESIGN.md "Round 3: the record is as durable as the run".
"""
