"""A replay as text: a walkthrough hand by hand with the score sheet (``craits replay show``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from server.engine import CARDS, Suit
from server.storage.replay.reader import Replay

JsonDict = dict[str, Any]

# --------------------------------------------------------------------------- walkthrough


def _cards(codes: Iterable[int]) -> str:
    return " ".join(str(CARDS[c]) for c in codes) or "-"


def _suit_word(suit: int) -> str:
    """A suit's word; a replay that fails verify may name a suit where the engine would not."""
    return Suit(suit).word if 0 <= suit <= 3 else f"suit {suit}"


def describe_event(event: Sequence[Any], name: Callable[[int], str]) -> str:
    """One engine event in words (the omniscient view)."""
    kind, seat, cards, suit, value = event
    who = name(seat) if seat >= 0 else ""
    match kind:
        case "dealer_draw":
            return f"{who} draws {_cards(cards)} for the deal"
        case "hand_start":
            return f"hand {value} starts, {who} deals"
        case "deal":
            return f"{who} is dealt {_cards(cards)}"
        case "turn_up":
            return f"turned up: {_cards(cards)}"
        case "name_suit":
            return f"{who} names {_suit_word(suit)}"
        case "play":
            text = f"{who} plays {_cards(cards)}"
            if suit >= 0:
                text += f" naming {_suit_word(suit)}"
            return text + (" and announces one card" if value else "")
        case "missed_announcement":
            return f"{who} did not announce one card: the next turn is forfeited"
        case "count":
            return f"the count is {value}"
        case "cooper":
            return f"{who} made a Cooper (out on a 6): draws one, the hand goes on"
        case "draw":
            return f"{who} draws {len(cards)}: {_cards(cards)}" if cards else f"{who} draws nothing"
        case "forfeit":
            return f"{who} forfeits the turn"
        case "skip":
            return f"{who} is skipped"
        case "reverse":
            return "direction reverses: now " + ("clockwise" if value > 0 else "counter-clockwise")
        case "pressure":
            return f"{who} takes a pressure of {value}"
        case "reshuffle":
            return f"the discard pile is reshuffled into a stock of {value}"
        case "penalty_draw":
            return f"{who} pays the one-card penalty"
        case "hand_end":
            return f"hand {value} ends"
        case "game_end":
            return "the game is over"
    return f"{kind} {who} {_cards(cards)} {value}".strip()


def _score_sheet(replay: Replay, name: Callable[[int], str]) -> list[str]:
    result = replay.result
    players = len(replay.header["seats"])
    names = [name(s) for s in range(players)]
    width = max(8, *(len(n) for n in names))
    head = f"{'hand':>4} {'dealer':<{width}} " + " ".join(f"{n:>{width}}" for n in names) + "  end"
    lines = ["Score sheet", head, "-" * len(head)]
    for h in result["hands"]:
        cells = []
        for s in range(players):
            cell = str(h["scores"][s]) + (f" (p{h['pressures'][s]})" if h["pressures"][s] else "")
            cells.append(f"{cell:>{width}}")
        lines.append(
            f"{h['number']:>4} {names[h['dealer']]:<{width}} " + " ".join(cells) + f"  {h['reason']}"
        )
    lines.append("-" * len(head))
    lines.append(f"{'':>4} {'total':<{width}} " + " ".join(f"{t:>{width}}" for t in result["totals"]))
    lines.append(f"{'':>4} {'place':<{width}} " + " ".join(f"{p:>{width}}" for p in result["placings"]))
    if result.get("team_totals"):
        lines.append(
            "teams: "
            + ", ".join(
                f"team {t} (seats {t} and {t + 2}) {tot}, place {pl}"
                for t, (tot, pl) in enumerate(
                    zip(result["team_totals"], result["team_placings"], strict=True)
                )
            )
        )
    lines.append("lowest total wins" if result.get("lower_wins", True) else "highest total wins")
    return lines


def _timing(rec: Mapping[str, Any]) -> str:
    parts = [rec["status"]]
    if rec.get("think_us") is not None:
        parts.append(f"think {rec['think_us'] / 1000:.1f} ms")
    if rec.get("transport_us") is not None:
        parts.append(f"transport {rec['transport_us'] / 1000:.1f} ms")
    if rec.get("note"):
        parts.append(str(rec["note"]))
    return ", ".join(parts)


def format_walkthrough(replay: Replay) -> str:
    """The game hand by hand in words, every decision with its timing, then the score sheet."""
    header = replay.header
    bots = replay.bots

    def name(seat: int) -> str:
        return f"seat {seat} ({bots[seat]})" if 0 <= seat < len(bots) else f"seat {seat}"

    cfg = header["config"]
    flags = ", ".join(
        f"{k}={v}" for k, v in sorted(cfg.get("flags", {}).items()) if v not in (False, "next_but_one")
    )
    lines = [
        f"Replay {replay.game_id or replay.path.name}"
        + (f" (tournament {header['tournament']})" if header.get("tournament") else ""),
        f"{cfg['preset']}, {cfg['players']} players, seed {header['seed']}" + (f", {flags}" if flags else ""),
        "Seats: " + ", ".join(name(s) for s in range(len(bots))),
    ]
    if header.get("started_at"):
        lines.append(f"Started {header['started_at']}")
    hands = {h["number"]: h for h in replay.result["hands"]}

    def emit(events: Iterable[Sequence[Any]], skip_first: bool = False) -> None:
        for i, ev in enumerate(events):
            if skip_first and i == 0:
                continue
            kind = ev[0]
            if kind == "hand_start":
                lines.append("")
                lines.append(f"Hand {ev[4]}: {name(ev[1])} deals")
            elif kind == "hand_end":
                h = hands.get(ev[4])
                if h is not None:
                    scores = ", ".join(f"{bots[s]} {v}" for s, v in enumerate(h["scores"]))
                    lines.append(f"  Hand {ev[4]} ends ({h['reason']}): {scores}")
                else:
                    lines.append(f"  Hand {ev[4]} ends")
            elif kind == "game_end":
                lines.append("")
                lines.append("The game is over.")
            else:
                lines.append(("    " if not skip_first else "      ") + describe_event(ev, name))

    lines.append("")
    lines.append("Choosing the first dealer:")
    emit(replay.start["events"])
    for rec in replay.decisions:
        events = rec["events"]
        first = events[0] if events else None
        own = first is not None and first[1] == rec["seat"] and first[0] in ("play", "name_suit", "draw")
        text = rec.get("text", str(rec["action"]))
        if own and first is not None and first[0] == "draw":
            text = f"draw {len(first[2])}: {_cards(first[2])}"
        lines.append(f"  #{rec['n']} {name(rec['seat'])} [{rec['kind']}] {text}  ({_timing(rec)})")
        emit(events, skip_first=own)
    if replay.aborted:
        lines.append(f"The game was aborted: {replay.aborted}")
    lines.append("")
    lines.extend(_score_sheet(replay, name))
    reports = replay.result.get("seat_reports")
    if reports:
        lines.append("")
        lines.append("Seats:")
        for s, rep in enumerate(reports):
            think = rep.get("think_us")
            lines.append(
                f"  {name(s)}: {rep.get('status', '?')}, {rep.get('decisions', 0)} decisions asked, "
                f"{rep.get('timeouts', 0)} timeouts, {rep.get('illegal', 0)} illegal, "
                f"{rep.get('malformed', 0)} malformed"
                + (f", think {think / 1000:.1f} ms in all" if isinstance(think, int) else "")
            )
    return "\n".join(lines) + "\n"


