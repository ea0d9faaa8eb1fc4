"""The write pipeline: every rule a write follows, one module per concern, each importing only those above it.

- ``report.py`` — what a write call learnt, for its audit line (:class:`~.report.WriteReport`), and the one
  function that says how it ended in the audit log's words (:func:`~.report.audit_outcome`).
- ``rules.py`` — a write's precondition (``expectedHash``: :func:`~.rules.expect`) and the outcome of a write whose
  answer was lost, settled by one look (:func:`~.rules.settle`, :func:`~.rules.settle_content`).
- ``history.py`` — what the version history says about a write: whose version came between ours and the one it
  was made from, and which to put back.
- ``story.py`` — what a content write found on the way (:class:`~.story.Written`) and how its result says it.
- ``content.py`` — a content write that loses no colleague's change (:func:`~.content.write_content`).
- ``rewrite.py`` — replacing a note's text with the diff in the answer (:func:`~.rewrite.rewrite`).
- ``many.py`` — one note of a write of many notes (replace_in_notes), with its own key and outcome.

A call reads top to bottom: a handler checks ``expectedHash`` (``rules.expect``), then ``rewrite`` or
``write_content`` writes: its note's lock, the rounds of PUTs (each settled by ``rules``), the history's check
after each, and a colleague's text put back on a conflict. What the way learns lands in ``ctx.report``.
"""
