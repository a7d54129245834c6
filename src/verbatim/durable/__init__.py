"""The durable-run core, shared by every kind of run (capture runs, note runs).

``store``: runs, fencing token, refund, due time and deadline in PostgreSQL (``durable_runs``).
``core``: lease → count the run and take the fencing token → bound the runs → steps →
release → notify, with the drain, the budgeted teardown and the refund.
``outbox``: pending deletes and notifications, retried by the sweep process until done.
``teardown``: the wall-clock budget of every teardown write; ``cancel``: the drain's cancel token.
``services``: what a kind of run needs of its process (a structural type: no kind imports another).
"""
