"""The table in words: the whole table, or one player's view of it (RULES.md Part H).

``render_view(game, seat)`` draws what ``seat`` knows and nothing else (H.1–H.5):

* its own hand (H.2), sorted and grouped by suit; of every other seat only the number of cards;
* the public facts (H.1): the dealer, the cumulative scores, the phase, whose turn it is, the cards each
  seat has played this deal, the current trick, the last trick and who won it, the tricks won, the
  suits each seat has shown to lack where the game keeps them (``shown_void``, H.1.1), the signals
  with the trick and card they went with (H.1.1);
* what a game announces (``render_seat_extra`` of the rules object): Ottocento's *a monte* answers and
  declared cards (H.3), Partita's announced trump discards (H.5), Millone's claim and the card paid
  for the Matto (H.4);
* its own hidden discards, to their owner only (H.3–H.5); the others see how many there are.

``render_view(game, None)`` draws everything (every hand, every discard): it is what the AEC env's
``render()`` shows, for a spectator or a replay, never for a player. The player's view is
``TarotAECEnv.render_view(agent)``; ``tarot-play`` shows it to the person at the table.
"""
from __future__ import annotations

import numpy as np

from .cards import EXCUSE, TRUMP
from .engine import Signal

SIGNAL_WORDS = tuple(s.name for s in Signal)
SUIT_ORDER = (TRUMP, EXCUSE, 0, 1, 2, 3)  # trumps high to low, the excuse, then each suit


def count(n: int, word: str) -> str:
    """``"1 card"``, ``"0 cards"``, ``"5 cards"``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_hand(game, cards) -> str:
    """Cards grouped by suit, in the pack's order (trumps high to low, the excuse, each suit)."""
    pack = game.pack
    arr = np.asarray(cards)
    ids = np.flatnonzero(arr) if arr.dtype == bool else np.sort(arr.astype(int))
    groups: dict[int, list[str]] = {}
    for c in ids:
        groups.setdefault(int(pack.suit[c]), []).append(pack.names[c])
    return "  ".join(f"{pack.suit_names[s]}: {' '.join(groups[s])}" for s in SUIT_ORDER if s in groups) or "(none)"


def seat_name(seat: int, me: int | None = None) -> str:
    return f"player_{seat}" + (" (you)" if seat == me else "")


def side_name(game, side: int) -> str:
    """A scoring side: ``team t`` in the partnership games, ``player_t`` in the two-player game."""
    return f"player_{side}" if game.num_teams == game.num_players else f"team {side}"


def sides_text(game, values) -> str:
    return "  ".join(f"{side_name(game, t)}: {int(v)}" for t, v in enumerate(values))


def deal_word(game) -> str:
    """What a game calls one round of dealing and play: Partita's deal, the Bolognese games' hand."""
    return "deal" if game.name == "partita" else "hand"


def deal_number(game) -> str:
    """The deal (hand) being played, counted from 1 (``deal 2 of 4`` where the game has a fixed length)."""
    if game.game_over:
        return ""
    done = getattr(game, "deals_played", getattr(game, "hands_played", 0))
    total = getattr(game.config, "deals_per_game", None)
    return f"{deal_word(game)} {done + 1}" + (f" of {total}" if total else "")


def signal_trick(game, seat: int, card: int) -> int:
    """The number (from 1) of the trick in which ``seat`` played ``card`` this deal (H.1.1)."""
    for i, (trick, _) in enumerate(game.tricks):
        if (seat, card) in trick:
            return i + 1
    return len(game.tricks) + 1  # the current trick


def render_view(game, seat: int | None = None, labels: list[str] | None = None) -> str:
    """The table as ``seat`` knows it (``None``: everything, see the module docstring).

    ``labels`` name who plays each seat (``heuristic``, ``you`` …)."""
    g = game
    pack = g.pack
    num = deal_number(g)
    lines = [f"== {g.name.capitalize()}" + (f" | {num}" if num else "") + " | scores: "
             + sides_text(g, g.scores) + f" | phase {g.phase.name}"]
    dealer = getattr(g, "dealer", None)
    voids = getattr(g, "shown_void", None)
    for s in range(g.num_players):
        tags = [] if g.num_teams == g.num_players else [f"team {g.team_of[s]}"]
        if labels and not (s == seat and labels[s] == "you"):
            tags.append(labels[s])
        if s == dealer:
            tags.append("dealer")
        if not g.game_over and s == g.current:
            tags.append("to act")
        held = count(int(g.hand_sizes[s]), "card")
        line = f"  {seat_name(s, seat)}" + (f" [{', '.join(tags)}]" if tags else "") + f": {held}"
        if seat is None or s == seat:
            line += " — " + format_hand(g, g.hands[s])
        if g.played[s].any():
            line += "  | played: " + " ".join(pack.names_of(g.played[s]))
        if voids is not None and voids[s].any():
            line += "  | shown void in: " + " ".join(pack.suit_names[u] for u in np.flatnonzero(voids[s]))
        lines.append(line + g.render_seat_extra(s, seat))
    if g.trick:
        lines.append(f"  trick {len(g.tricks) + 1}: " + "  ".join(f"player_{s}: {pack.names[c]}" for s, c in g.trick))
    if g.tricks:
        last, w = g.tricks[-1]
        lines.append(f"  last trick ({len(g.tricks)}): " + "  ".join(f"player_{s}: {pack.names[c]}" for s, c in last)
                     + f"  -> won by {seat_name(w, seat)}")
    if g.signals:
        lines.append("  signals: " + "  ".join(
            f"player_{s} {SIGNAL_WORDS[k]} with {pack.names[c]} (trick {signal_trick(g, s, c)})"
            for s, c, k in g.signals))
    if g.pending_signal >= 0 and (seat is None or seat == g.current):
        lines.append(f"  {seat_name(g.current, seat)} chose the signal {SIGNAL_WORDS[g.pending_signal]} "
                     "for the next card")
    lines.append("  tricks won: " + sides_text(g, g.tricks_won))
    return "\n".join(lines)
