"""Participants: the roster, their tokens, the bots they submit (versions), the build and the
admission check each version passes before it plays, and what puts admitted versions on a ladder.

One concern in one room, beside ``tournaments/`` (which it uses to seat versions on a ladder)
and below the faces that show it (``server.web``'s private pages, ``server.cli``'s ``roster`` and
``submit`` commands). See docs/teachers.md.

* :mod:`participants.tokens`: tokens made, shown once, kept only as salted scrypt hashes;
* :mod:`participants.roster`: a roster folder's store (participants, versions, uploads), in its
  SQLite or in a ladder's PostgreSQL (where workers elsewhere fetch the versions);
* :mod:`participants.unpack`: an upload, bounded, unpacked into a folder; its ``bot.toml``;
* :mod:`participants.admission`: build in the sandbox, the checker, one validation game;
* :mod:`participants.entrants`: the ladder's bots from the roster, round after round.
"""
