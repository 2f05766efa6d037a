"""What the server sends about a game: :func:`seat_view` is the body of every game response.

To a seat it sends only what that seat knows (RULES.md Part H, as ``tarot_env.view.render_view`` draws it):
its own hand, the number of cards of the others, the public facts (cards played, the trick, the won
piles, scores, signals, declarations, announced discards), its own hidden discards, the log as that seat
read it, each finished deal as ``Game.result_view`` gives it to that seat, and its legal moves when it
is to act. A spectator (``viewer=None``: a watched game, a replay) sees everything.
``tests/test_web.py`` re-deals what a seat cannot know and checks that this body does not change.
"""
from __future__ import annotations

import numpy as np

from agents.play.human import describe_result
from tarot_env.engine import SIGNAL_NAMES
from tarot_env.view import deal_number, side_name

from .explain import explanations
from .session import Session, jsonable


def seat_view(session: Session, viewer: int | None) -> dict:
    """The JSON body sent to ``viewer`` (a seat, or ``None`` for a spectator) about ``session``."""
    g = session.game
    yours = viewer is not None and viewer == session.human and not session.thinking and not g.game_over \
        and g.current == viewer
    legal = g.legal_actions() if yours else []
    out = table_view(g, viewer, session.labels)
    out.update({
        "id": session.id, "human_seat": session.human, "step": session.step, "version": session.version,
        "your_turn": yours, "thinking": session.thinking, "bot_error": session.bot_error,
        "pending_signal": pending_signal(g, viewer),
        "legal": [{"action": a, "name": g.action_name(a)} for a in legal],
        "explain": explanations(g, legal),
        "log": [e.text_for(viewer) for e in session.events if e.result is None],
        "results": [result_view(g, r, viewer, cum) for r, cum in deal_results(session)],
        "can_undo": yours and len(session.decisions) > 1,
        "last_trick": out["last_trick"] or session.last_trick,  # a deal's last trick, shown after it
    })
    return out


def table_view(g, viewer: int | None, labels: list[str]) -> dict:
    """The table of rules object ``g`` as ``viewer`` knows it (``None``: everything)."""
    return {
        "game": g.name, "viewer": viewer, "players": list(labels),
        "phase": g.phase.name, "deal": deal_number(g), "dealer": int(getattr(g, "dealer", -1)),
        "to_act": None if g.game_over else int(g.current),
        "sides": [side_name(g, t) for t in range(g.num_teams)],
        "team_of": [int(t) for t in g.team_of],
        "scores": np.asarray(g.scores).tolist(), "tricks_won": np.asarray(g.tricks_won).tolist(),
        "seats": [seat_info(g, labels, s, viewer) for s in range(g.num_players)],
        "trick": [[int(s), int(c)] for s, c in g.trick],
        "last_trick": last_trick(g),
        "piles": [np.flatnonzero(g.won[t]).tolist() for t in range(g.num_teams)],
        "signals": signals(g),
        "game_over": bool(g.game_over), "winner": None if g.winner is None else int(g.winner),
    }


def seat_info(g, labels: list[str], s: int, viewer: int | None) -> dict:
    shown = viewer is None or viewer == s
    return {"seat": s, "label": labels[s], "team": int(g.team_of[s]), "cards": int(g.hand_sizes[s]),
            "hand": np.flatnonzero(g.hands[s]).tolist() if shown else None,
            "played": np.flatnonzero(g.played[s]).tolist(),
            "extra": g.render_seat_extra(s, viewer).replace("\n", " |").strip(" |")}


def last_trick(g) -> dict | None:
    if not g.tricks:
        return None
    cards, w = g.tricks[-1]
    return {"number": len(g.tricks), "cards": [[int(s), int(c)] for s, c in cards], "winner": int(w)}


def signals(g) -> list[dict]:
    """The signals given this deal, each with the trick (from 1) of the card it went with (H.1.1)."""
    if not g.signals:  # (Millone has none, and no card_trick)
        return []
    current = len(g.tricks) + 1
    at = g.card_trick
    return [{"seat": int(s), "card": int(c), "signal": SIGNAL_NAMES[k], "trick": int(at[c]) or current}
            for s, c, k in g.signals]


def pending_signal(g, viewer: int | None) -> str | None:
    """The signal the seat to act chose for its next card: known to that seat (and a spectator) only."""
    if g.pending_signal < 0 or g.game_over or not (viewer is None or viewer == g.current):
        return None
    return SIGNAL_NAMES[g.pending_signal]


def deal_results(session: Session):
    return [(e.result, e.cumulative) for e in session.events if e.result is not None]


def result_view(g, record: dict, viewer: int | None, cumulative) -> dict:
    """A finished deal as ``viewer`` knows it: the record (``result_view``) and its text."""
    known = record if viewer is None else type(g).result_view(record, viewer)
    known = {k: v for k, v in known.items() if k != "tricks"}  # the tricks are in the log already
    return {"record": jsonable(known), "text": describe_result(g, record, viewer, np.asarray(cumulative))}
