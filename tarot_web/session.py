"""One game at the table: the rules object, a player per seat, the log, undo, and the bots' turns.

A :class:`Session` is changed only under its ``lock``. The bots think off the event loop
(:meth:`Session.run_bots`, run in a thread pool by the app) on a clone of the game, and their move is
applied under the lock; the person's move, an undo and every view take the lock briefly. The JSONL
records are those of ``tarot-play --log`` (``agents.play.human``): header, action, undo, deal_result,
game_end, so ``tarot-play --replay`` reads a downloaded game.
"""
from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.play.human import (
    LOG_VERSION,
    closed_trick_winner,
    closing_trick,
    cumulative_after,
    describe_move,
    new_game,
    why_illegal,
)

from .requests import BadRequest


def jsonable(v: Any) -> Any:
    """Numpy scalars and arrays (and tuples) of a deal record as plain JSON values."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


@dataclass
class Event:
    """One line of the table's log: ``public`` is what every seat reads; ``owner`` (what ``seat``
    itself reads) and ``full`` (a spectator's) differ for a hidden discard."""

    public: str
    seat: int | None = None
    owner: str | None = None
    full: str | None = None
    result: dict | None = None  # a finished deal's full record (each seat reads its result_view)
    cumulative: list | None = None

    def text_for(self, viewer: int | None) -> str:
        if viewer is None:
            return self.full or self.public
        return self.owner if (viewer == self.seat and self.owner) else self.public


@dataclass
class Decision:
    """The game at one of the person's decisions, for undo: the action count, a clone, the log length."""

    step: int
    game: Any
    events: int
    results: int
    last_trick: dict | None


@dataclass
class Session:
    game_name: str
    seed: int
    options: dict
    specs: list[str]
    labels: list[str]
    policies: dict[int, Any]
    human: int | None
    pace: float = 0.0
    id: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    lock: threading.Lock = field(default_factory=threading.Lock)
    thinking: bool = False
    bot_error: str | None = None
    version: int = 0  # bumped by every change (a bot's move is dropped if an undo came meanwhile)
    last_used: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        self.game = new_game(self.game_name, self.seed, self.options)
        self.step = 0
        self.events: list[Event] = []
        self.results: list[dict] = []  # the finished deals' full records, in order
        self.decisions: list[Decision] = []
        self.last_trick: dict | None = None  # the last trick closed (the last of a deal stays shown)
        self.records: list[dict] = [{
            "type": "header", "version": LOG_VERSION, "game": self.game_name, "seed": self.seed,
            "options": dict(self.options), "config": self.game.config.to_dict(), "games": 1,
            "human_seat": self.human, "players": list(self.labels)}]
        self._note_decision()

    # --- what the person may do -------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return bool(self.game.game_over)

    def bots_to_move(self) -> bool:
        return not self.over and self.game.current != self.human

    def check_turn(self, seat: int) -> None:
        """``BadRequest`` unless ``seat`` is the person's and it is to act now (nothing changes)."""
        if self.human is None:
            raise BadRequest(403, "this is a watched game: no seat is played from the page")
        if seat != self.human:
            raise BadRequest(403, f"seat {seat} is not yours: you play seat {self.human}")
        if self.over:
            raise BadRequest(409, "the game is over: no move is legal (start a new game)")
        if self.thinking or self.game.current != seat:
            raise BadRequest(409, f"not your turn: player_{self.game.current} is to act")

    def human_move(self, seat: int, action: int) -> None:
        """Play the person's ``action`` (checked: seat, turn, legality) or raise ``BadRequest``."""
        self.check_turn(seat)
        g = self.game
        if not 0 <= action < g.num_actions:
            raise BadRequest(422, f"action {action} is out of range: {g.name} actions are 0..{g.num_actions - 1}")
        if not g.legal_mask()[action]:
            raise BadRequest(422, f"illegal action {action} ({g.action_name(action)}): {why_illegal(g, action)}; "
                                  f"legal now: {g.describe_legal()}")
        self.apply(seat, action)

    def undo(self, seat: int) -> int:
        """Back to the person's previous decision (the bots' moves after it are taken back too);
        returns the number of actions taken back."""
        self.check_turn(seat)
        if len(self.decisions) < 2:
            raise BadRequest(409, "nothing to undo: this is your first move of the game")
        self.decisions.pop()
        d = self.decisions.pop()
        taken_back = self.step - d.step
        self.step, self.game = d.step, d.game.clone()
        del self.events[d.events:]
        del self.results[d.results:]
        self.last_trick = d.last_trick
        self.records.append({"type": "undo", "to": d.step})
        self.events.append(Event(f"undo: back to your previous move; {taken_back} actions taken back "
                                 f"(yours and the other players' since then)"))
        self.version += 1
        self._note_decision()
        return taken_back

    # --- applying a move ------------------------------------------------------------------------------
    def apply(self, seat: int, action: int) -> None:
        """Apply a legal action of ``seat`` (the caller holds the lock): log it, its trick, its deal."""
        g = self.game
        texts = [describe_move(g, seat, action, v) for v in (-1, seat, None)]
        tricks, seen, closing = len(g.tricks), len(g.history), closing_trick(g, seat, action)
        g.apply(action)
        self.records.append({"type": "action", "i": self.step, "seat": seat, "action": int(action),
                             "name": g.action_name(action)})
        self.step += 1
        self.version += 1
        self.events.append(Event(texts[0], seat, texts[1], texts[2]))
        if closing:  # (the last trick of a deal is no longer in g.tricks: the next deal is dealt)
            w = closed_trick_winner(g, closing, tricks)
            self.last_trick = {"number": tricks + 1, "cards": [[int(s), int(c)] for s, c in closing], "winner": int(w)}
            self.events.append(Event(f"trick {tricks + 1}: " + "  ".join(
                f"player_{s}: {g.pack.names[c]}" for s, c in closing) + f" -> won by player_{w}"))
        new = g.history[seen:]
        for res, cum in zip(new, cumulative_after(g, new)):
            self.results.append(res)
            self.events.append(Event("", result=res, cumulative=np.asarray(cum).tolist()))
            self.records.append({"type": "deal_result", "result": jsonable(res)})
        if g.game_over:
            self.records.append({"type": "game_end", "scores": np.asarray(g.scores).tolist(),
                                 "winner": None if g.winner is None else int(g.winner)})
        self._note_decision()

    def _note_decision(self) -> None:
        """Keep a clone of the game when the person is to decide (the undo points)."""
        if self.human is not None and not self.over and self.game.current == self.human:
            if not self.decisions or self.decisions[-1].step != self.step:
                self.decisions.append(Decision(self.step, self.game.clone(), len(self.events), len(self.results),
                                               self.last_trick))

    # --- the bots -------------------------------------------------------------------------------------
    def run_bots(self, later=None) -> None:
        """Let the bots move until it is the person's turn or the game is over (in a worker thread).
        Each bot thinks on a clone, outside the lock; a move is dropped if the game changed meanwhile.
        With a ``pace``, the next move is handed to ``later(seconds, fn)`` instead of waiting here, so a
        slow watched game never holds a worker of the pool."""
        try:
            while self._bot_move():
                if self.pace > 0 and later is not None:
                    later(self.pace, lambda: self.run_bots(later))
                    return
        except Exception as e:  # a failing bot stops the game with its reason shown, never the server
            with self.lock:
                self.bot_error = f"{type(e).__name__}: {e}"
                self.thinking = False

    def _bot_move(self) -> bool:
        """One bot's move; False (and ``thinking`` cleared) when no bot is to move."""
        with self.lock:
            if not self.bots_to_move():
                self.thinking = False
                return False
            seat, version, work = self.game.current, self.version, self.game.clone()
        action = choose(self.policies[seat], work, seat)
        with self.lock:
            if self.version == version:
                self.apply(seat, action)
        return True

    def log_text(self) -> str:
        """The game as JSON lines (the records of ``tarot-play --log``)."""
        import json

        return "".join(json.dumps(r) + "\n" for r in self.records)


def choose(policy, game, seat: int) -> int:
    """``policy``'s action for ``seat`` in ``game`` (a private clone), checked legal."""
    if getattr(policy, "needs_game", False):
        a = int(policy.act_game(game))
    else:
        a = int(policy.act(game.observation(seat), game.legal_mask()))
    if not game.legal_mask()[a]:
        raise RuntimeError(f"the player of seat {seat} chose the illegal action {a}")
    return a
