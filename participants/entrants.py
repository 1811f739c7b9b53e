"""A roster's participants on a ladder: the bots of its next rounds, read afresh each time.

``craits ladder run FILE`` with ``roster = "FOLDER"`` in the file hands :class:`RosterEntrants`
to :func:`tournaments.ladder.run_ladder`, which asks it before every new round: the file's
own bots (house bots, remote bots), plus each participant's active version (the pinned one,
else the newest admitted) as a launched bot named ``NAME.vN`` whose folder is the version's.
So a version admitted while the ladder runs plays from the next round on, without a restart,
and each version keeps its own results and rating. A participant's token also lets their own
bot connect to the referee (:meth:`RosterEntrants.resolve_token`): from then on it plays as
a remote bot named after them while it is connected.

A version that enters starts from its predecessor's rating mean, with the uncertainty of a
new bot (as Halite did): a fix is not ranked last until it has played its way back, and a
regression is found out as fast as a newcomer's level. The means are kept in the roster's
``priors.json`` (:func:`tournaments.standings.read_priors`), so the board and ``ladder
standings`` rate the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time

from participants.compare import write_ladder_game
from participants.fairness import Pauses
from participants.roster import ORGANIZER, Roster, Version, split_bot
from participants.tokens import token_id
from server.errors import UserError
from tournaments.config import RESOLVED_PREFIX, BotEntry, TournamentConfig
from tournaments.standings import Standings, read_priors, write_priors

GUESSES = 3
"""Wrong tokens with one token id the referee hashes in :data:`GUESS_WINDOW_S` (each costs ~50 ms
of its event loop); more are refused unhashed."""
GUESS_WINDOW_S = 60.0


class RosterEntrants:
    """The ladder's bots from the file and from the roster folder the file names."""

    def __init__(self, base: TournamentConfig) -> None:
        if base.roster is None:
            raise ValueError("the tournament file names no roster")
        self.base = base
        self.roster = Roster(base.roster)
        self.roster.check_private()  # (a ladder serves its participants: nobody else may read their roster)
        if budget := self.roster.limits().get("output_budget"):  # (`craits roster set output_budget=...`)
            self.base = base = dataclasses.replace(base, limits=dataclasses.replace(base.limits,
                                                                                    output_budget=int(budget)))
        self._check_names()
        write_ladder_game(self.roster, base.game)  # (comparisons and scrimmages play this game too)
        self.connected: set[str] = set()
        """Participants whose own bot has connected with their token (they play as NAME)."""
        self._known: dict[bytes, str] = {}
        self._guesses: dict[str, list[float]] = {}
        self._opened: dict[str, str] = {}
        """The token id each participant's own bot last connected with (checked by :meth:`revoked`)."""
        self._lock = threading.Lock()
        """The referee resolves tokens and checks revocations in threads (they read the roster)."""

    def _check_names(self) -> None:
        """A bot of the file named as a participant (or one of their versions, ``NAME.vN``) would
        take a seat that is theirs: refused before anything is played (their own bot, connected
        with their token, plays as NAME: two bots of one name at the next table)."""
        people = {person.name for person in self.roster.participants()}
        for bot in self.base.bots:
            owner = bot.name if bot.name in people else (split_bot(bot.name) or ("",))[0]
            if owner in people:
                raise UserError(f"{self.base.source}: bot {bot.name!r} is named as participant {owner!r} of the "
                                f"roster {self.base.roster} (whose own bot plays as {owner!r}, their versions as "
                                f"{owner}.v1, ...): give it another name")

    def versions(self) -> list[Version]:
        """The participants' active versions, less those paused for faulting (participants.fairness)."""
        paused = Pauses(self.roster).paused_ids()
        return [v for v in self.roster.active() if v.id not in paused]

    def resolve_token(self, token: str) -> tuple[str, str] | None:
        """The referee's resolver: a participant's token opens their remote bot's seat, named
        after them. A token that passed is remembered (as a hash) for the run; a revoked one
        stops at the next connection. (Called in a thread: it hashes and reads the roster, which
        may wait for its database; the lock guards only this object's dicts, so that it never
        waits behind another thread's roster read.)"""
        digest = hashlib.sha256(token.encode()).digest()
        ident = token_id(token)
        with self._lock:
            name = self._known.get(digest)
        if name is None:
            if ident is None:
                return None
            now = time.monotonic()
            with self._lock:
                recent = [t for t in self._guesses.get(ident, []) if now - t < GUESS_WINDOW_S]
            if len(recent) >= GUESSES:
                return None
            name = self.roster.authenticate(token)
            with self._lock:
                if name is None or name == ORGANIZER:
                    self._guesses[ident] = [*recent, now]
                    return None
                self._known[digest] = name
        elif self.roster.session_key(name) != ident:  # revoked or renewed since
            with self._lock:
                self._known.pop(digest, None)
            return None
        with self._lock:
            first = name not in self.connected
            self.connected.add(name)
            self._opened[name] = ident or ""
        if first:  # (kept for `final show`; a roster that cannot be written now costs the bot nothing)
            with contextlib.suppress(UserError):
                self.roster.note_live(name)
        return f"{RESOLVED_PREFIX}{name}", name

    def revoked(self) -> list[str]:
        """The participants whose own bot connected with a token revoked or renewed since (each
        said once): the referee ends their streams now rather than at their next connection.
        (Called in a thread: it reads the roster and only drops entries.)"""
        with self._lock:
            opened = list(self._opened.items())
        changed = [(name, ident) for name, ident in opened if self.roster.session_key(name) != ident]
        gone = []
        with self._lock:
            for name, ident in changed:
                if self._opened.get(name) != ident:  # (back with a new token meanwhile)
                    continue
                del self._opened[name]
                gone.append(name)
                for digest, known in list(self._known.items()):
                    if known == name:
                        self._known.pop(digest, None)
        return gone

    def config(self, versions: list[Version] | None = None) -> TournamentConfig:
        """The file's config with the participants' active versions among its bots."""
        versions = self.versions() if versions is None else versions
        entries = tuple(BotEntry(name=v.bot, command=v.command, cwd=str(self.roster.version_dir(v))) for v in versions)
        connected = sorted(self.connected.copy())  # (one step: a resolver thread may add to it meanwhile)
        remote = tuple(BotEntry(name=name, token=f"{RESOLVED_PREFIX}{name}") for name in connected
                       if name not in self.base.bot_names)  # (one added to the roster since, named as a house bot)
        return dataclasses.replace(self.base, bots=(*self.base.bots, *entries, *remote))

    def __call__(self, standings: Standings) -> TournamentConfig:
        Pauses(self.roster).check(standings.rows)
        versions = self.versions()
        self._start_from_predecessors(versions, standings)
        self.roster.publish(self.base.name, versions)  # (a roster in PostgreSQL: for workers elsewhere)
        return self.config(versions)

    def _start_from_predecessors(self, versions: list[Version], standings: Standings) -> None:
        """A version not seen before starts from the rating mean of its latest rated predecessor."""
        assert self.base.roster is not None
        priors = read_priors(self.base.roster)
        rated = {row.bot: row.rating_mu for row in standings.rows if row.games}
        known = {row.bot for row in standings.rows}
        changed = False
        for version in versions:
            if version.bot in priors or version.bot in known:
                continue
            earlier = [v for v in self.roster.versions(version.participant)
                       if v.number < version.number and v.bot in rated]
            if earlier:
                priors[version.bot] = rated[earlier[-1].bot]
                changed = True
        if changed:
            write_priors(self.base.roster, priors)
