"""A hostile bot that bundles the engine and tries every way to know its opponents' cards
(issue 35): seeds derived from every public value (the labels in the game id, small file
seeds 0..1000, old-style and deal-key style), the seeds ``GameEnd`` told it, and its memory
of the deals it met. At its first decision of each game it writes what it predicts of the
other seats' hands, one JSON line per game, to the file named by its argument; the test
checks the predictions against the replays. Given a second file that holds a board's address
(``craits web`` of the run it plays), it first reads the board's pages and API, every game's
replay and events among them, and tries every number it finds there as a seed.

    python spy_bot.py PREDICTIONS_FILE [BOARD_ADDRESS_FILE]
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # (the repo's engine, bundled)

from craits_bot import Bot, pb, run

from server.engine import make_config
from server.engine.state import GameState
from tournaments.schedule import derive_seed

try:  # (the code before issue 35 had neither: the spy runs against it too)
    from tournaments.schedule import DUPLICATE_MODES, deal_key, game_seed
except ImportError:
    DUPLICATE_MODES, deal_key, game_seed = (), None, None  # type: ignore[assignment]

SMALL_SEEDS = range(1001)


def labels(game_id: str) -> list[tuple[str, tuple[object, ...]]]:
    """(style, labels) that a seed of this game id could come from: 'old' (sha256 of a file
    seed) or 'key' (HMAC of a deal key derived from a file seed)."""
    out: list[tuple[str, tuple[object, ...]]] = []
    if m := re.fullmatch(r"d(\d+)-t(\d+)-r(\d+)", game_id):
        deal, table, rotation = int(m[1]) - 1, int(m[2]) - 1, int(m[3]) - 1
        out += [("old", ("deal", deal)), ("old", ("table", table, "deal", deal)), ("old", ("table", table, "deal", 0))]
        out += [("key", ("mode", mode, deal, table, rotation)) for mode in DUPLICATE_MODES]
    elif m := re.fullmatch(r"round(\d+)-r(\d+)", game_id):
        number, rotation = int(m[1]), int(m[2]) - 1
        out += [("old", ("ladder-deal", number)), ("key", ("ladder-deal", number)),
                ("key", ("ladder-deal", number, "rotation", rotation))]
    elif m := re.fullmatch(r"a(\d+)-r(\d+)", game_id):
        table, rotation = int(m[1]) - 1, int(m[2]) - 1
        out += [("old", ("adaptive-deal", table)), ("key", ("adaptive-deal", table)),
                ("key", ("adaptive-deal", table, "rotation", rotation))]
    elif m := re.fullmatch(r"cmp\d*-d(\d+)-[ab]-r(\d+)", game_id):  # a comparison's
        number, rotation = int(m[1]) - 1, int(m[2]) - 1
        out += [("old", ("compare-deal", number)), ("old", ("compare-deal", number, "rotation", rotation))]
    return out


def seed_of(style: str, small: int, parts: tuple[object, ...]) -> int | None:
    if style == "key" and deal_key is None:
        return None
    base: int | bytes = small if style == "old" else deal_key(small)
    if parts[0] == "mode":
        return game_seed(base, str(parts[1]), *parts[2:])  # type: ignore[arg-type]
    return derive_seed(base, *parts)


def board_seeds(board: Path) -> tuple[set[int], int]:
    """(every whole number of 6 digits or more that the board's pages and API serve, the games it lists)."""
    base = board.read_text().strip().rstrip("/")

    def get(path: str) -> str:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as response:
                body = response.read()
        except urllib.error.HTTPError as err:  # (a withheld replay: 403, its body read all the same)
            body = err.read()
        return (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode("utf-8", "replace")

    pages = [get("/api/games"), get("/api/standings"), get("/games"), get("/")]
    ids = set(re.findall(r'"game_id":\s*"([^"]+)"', pages[0]))
    for game_id in sorted(ids):
        pages += [get(f"/api/games/{game_id}{tail}") for tail in ("", "/events", "/replay")] + [get(f"/games/{game_id}")]
    return {int(s) for page in pages for s in re.findall(r"(?<![\w.])\d{6,}(?![\w.])", page)}, len(ids)


class Spy(Bot):
    def __init__(self, out: str, board: str | None = None) -> None:
        self.out = Path(out)
        self.board = None if board is None else Path(board)
        self.seen = 0  # the games the board listed at this game's start
        self.file_seed: int | None = None
        self.searched = False
        self.told: list[int] = []  # GameEnd seeds
        self.met: dict[tuple[str, int], tuple[int, list[str]]] = {}  # (turned card, dealer) -> (seat, hand)
        self.game = None
        self.predicted: set[str] = set()

    def on_game_start(self, game):
        self.game = game

    def on_game_end(self, game):
        if game.seed:
            self.told.append(game.seed)

    def state(self, seed: int) -> GameState:
        g = self.game
        return GameState(make_config(g.preset, g.players, short_game=g.flags.short_game), seed)

    def guess(self, hand: list[str]) -> tuple[str, GameState] | None:
        """A seed whose deal gives this seat these cards (the hand it held before it first played)."""
        g = self.game
        mine = Counter(hand)

        def fits(seed: int) -> GameState | None:
            # (a seat may draw before its first decision, from the turned-up card on: its hand
            # then holds those cards too)
            state = self.state(seed)
            if not mine - Counter(map(str, state.hand_of(g.seat))):
                return state
            return None

        seeds = list(self.told)
        if self.board is not None:
            served, self.seen = board_seeds(self.board)
            # (the board polls the store: wait, a few seconds at most, until it lists the games
            # played before this one in a one-table run, "dDDDD-t00001-rR": 3 a deal, in order)
            match = re.fullmatch(r"d(\d{4})-t\d{5}-r(\d)", g.game_id)
            before = 3 * (int(match[1]) - 1) + int(match[2]) - 1 if match else 0
            waited = time.monotonic() + 5
            while self.seen < before and time.monotonic() < waited:
                time.sleep(0.05)
                served, self.seen = board_seeds(self.board)
            seeds += sorted(served)
        for seed in seeds:
            if found := fits(seed):
                return "GameEnd.seed" if seed in self.told else "the board", found
        forms = labels(g.game_id)
        smalls = [self.file_seed] if self.file_seed is not None else ([] if self.searched else SMALL_SEEDS)
        self.searched = True
        for small in smalls:
            for style, parts in forms:
                seed = seed_of(style, small, parts)
                if seed is not None and (found := fits(seed)):
                    self.file_seed = small
                    return f"file seed {small} ({style})", found
        return None

    def choose(self, request):
        g = self.game
        obs = request.observation
        if g is not None and g.game_id not in self.predicted and obs.hand_number == 1 and obs.hand:
            self.predicted.add(g.game_id)
            hand = first_hand(obs, g.seat)
            turned = card_text(obs.top_card) if obs.discard_size == 1 else ""  # (nobody has played yet)
            hands: dict[int, list[str]] = {}
            how = ""
            if found := self.guess(hand):
                how, state = found
                hands = {s: sorted(map(str, state.hand_of(s))) for s in range(g.players) if s != g.seat}
            elif turned and (seen := self.met.get((turned, obs.dealer))) and seen[0] != g.seat:
                how, hands = "memory", {seen[0]: seen[1]}  # the deal again: my old hand is at my old seat
            if turned:
                self.met[(turned, obs.dealer)] = (g.seat, sorted(hand))
            with self.out.open("a") as f:
                f.write(json.dumps({"game": g.game_id, "seat": g.seat, "how": how, "hands": hands,
                                    "seen": self.seen}) + "\n")
        return request.legal_actions[0]


def first_hand(obs, seat: int) -> list[str]:
    """The cards this seat held before it first played or drew: its hand now, its plays put
    back, its draws taken out. (The referee plays a seat's forced moves, one legal action,
    without asking it, so its first decision may come after some; a dealer who named the suit
    of a turned-up 8 or 9 was shown its deal as hidden.)"""
    cards = Counter(card_text(c) for c in obs.hand)
    for event in obs.history:
        if event.seat == seat and event.kind == pb.EVENT_KIND_PLAY:
            cards.update(card_text(c) for c in event.cards)
        elif event.seat == seat and event.kind == pb.EVENT_KIND_DRAW:
            cards.subtract(card_text(c) for c in event.cards)
    return sorted(cards.elements())


def card_text(card) -> str:
    return card.text  # (the engine's own names: "QS", "10H")


if __name__ == "__main__":
    args = []
    while len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        args.append(sys.argv.pop(1))
    run(Spy(*args))  # (the kit reads the rest)
