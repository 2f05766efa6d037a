"""Reading a game log (the JSON lines of ``tarot-play --log`` and of a downloaded web game) for replay.

Nothing in a log is trusted: it is parsed as JSON (never unpickled), every field is checked (its type,
its range, the game's options through the game's own config), every action is re-applied through the
rules (an illegal one is refused with its line number), and an undo must go back to one of the person's
actions. :class:`Replay` gives the game after each step.
"""
from __future__ import annotations

from dataclasses import dataclass

import tarot_env
from agents.play.human import LOG_VERSION, new_game

from .requests import MAX_LOG, BadRequest, loads_strict

KNOWN = {"header", "action", "undo", "deal_result", "game_end", "next_game", "quit"}
MAX_LINES = 20_000  # a game of thousands of actions fits; a replay keeps a clone per 32 steps


@dataclass
class Frame:
    """One step of a replay: what happened, and how its game is made from an earlier frame's (``parent``):
    by applying ``action``, by the next game (``action = NEXT``), or as it is (an undo: ``None``)."""

    text: str
    parent: int
    action: int | None


NEXT = -1  # Frame.action of a "next_game" record
CHECKPOINT = 32  # a clone of the game is kept every CHECKPOINT frames; the others are replayed from one


class Replay:
    """A checked game log, step by step: ``len(replay)`` frames, ``replay.game(k)`` the game at frame k
    (rebuilt from the nearest kept clone, so a long log does not hold a game per step)."""

    def __init__(self, records: list[dict]):
        game = start_game(records[0])
        self.labels = records[0].get("players") or [f"player_{s}" for s in range(game.num_players)]
        self.frames = [Frame("the deal", 0, None)]
        self.kept = {0: game.clone()}
        human = records[0].get("human_seat")
        before: dict[int, int] = {}  # a person's action id -> the frame before it (for an undo)
        for rec in records[1:]:
            game = self._step(rec, game, human, before)

    def __len__(self) -> int:
        return len(self.frames)

    def _add(self, text: str, parent: int, action: int | None, game) -> None:
        self.frames.append(Frame(text, parent, action))
        if (len(self.frames) - 1) % CHECKPOINT == 0:
            self.kept[len(self.frames) - 1] = game.clone()

    def _step(self, rec: dict, game, human, before: dict):
        last = len(self.frames) - 1
        if rec["type"] == "action":
            seat, action = _action(rec, game)
            if seat == human:
                before[rec["i"]] = last
            self._add(f"player_{seat}: {game.action_name(action)}", last, action, game)
        elif rec["type"] == "undo":
            to = _int(rec, "to", 0, 10**7)
            if to not in before:
                raise BadRequest(422, f"log line {rec['_line']}: undo to action {to}, which is not a move of "
                                      f"the person")
            target = before[to]
            for i in [i for i in before if i >= to]:
                del before[i]
            game = self.game(target)
            self._add(f"undo: back to action {to}", target, None, game)
        elif rec["type"] == "next_game":
            game = game.next_game()
            before.clear()
            self._add("next game", last, NEXT, game)
        return game

    def game(self, k: int):
        """The game at frame ``k`` (a new object)."""
        ops = []
        while k not in self.kept:
            f = self.frames[k]
            ops.append(f.action)
            k = f.parent
        game = self.kept[k].clone()
        for action in reversed(ops):
            if action == NEXT:
                game = game.next_game()
            elif action is not None:
                game.apply(action)
        return game


def parse_log(text: str) -> list[dict]:
    """The records of a JSONL game log, each a JSON object with a known ``type``; ``BadRequest`` naming
    the first bad line otherwise."""
    if len(text.encode()) > MAX_LOG:
        raise BadRequest(413, f"the log is over the limit of {MAX_LOG} bytes")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise BadRequest(422, "the log is empty")
    if len(lines) > MAX_LINES:
        raise BadRequest(413, f"the log has {len(lines)} lines, over the limit of {MAX_LINES}")
    out = []
    for n, line in lines:
        try:
            rec = loads_strict(line)
        except ValueError as e:
            raise BadRequest(422, f"log line {n} is not valid JSON: {e}") from None
        if not isinstance(rec, dict) or rec.get("type") not in KNOWN:
            raise BadRequest(422, f"log line {n} is not a game log record (type must be one of {sorted(KNOWN)})")
        rec["_line"] = n
        out.append(rec)
    return out


def _int(rec: dict, key: str, lo: int, hi: int, *, none_ok: bool = False) -> int | None:
    v = rec.get(key)
    if v is None and none_ok:
        return None
    if type(v) is not int or not lo <= v <= hi:
        raise BadRequest(422, f"log line {rec['_line']}: {key} must be an integer {lo}..{hi}, got {v!r}")
    return v


def start_game(header: dict):
    """The game a log's header describes (game, seed, options checked)."""
    if header.get("type") != "header":
        raise BadRequest(422, "log line 1 must be the header (type 'header')")
    if header.get("version") != LOG_VERSION:
        raise BadRequest(422, f"log version {header.get('version')!r}; this server reads version {LOG_VERSION}")
    game = header.get("game")
    if game not in tarot_env.GAMES:
        raise BadRequest(422, f"log header: unknown game {game!r}; games are {sorted(tarot_env.GAMES)}")
    seed = _int(header, "seed", 0, 2**63 - 1)
    options = header.get("options") or {}
    if not isinstance(options, dict):
        raise BadRequest(422, "log header: options must be a JSON object")
    try:
        g = new_game(game, seed, options)
    except ValueError as e:
        raise BadRequest(422, f"log header: {e}") from None
    _int(header, "human_seat", 0, g.num_players - 1, none_ok=True)
    players = header.get("players")
    if players is not None and not (isinstance(players, list) and len(players) == g.num_players
                                    and all(isinstance(p, str) for p in players)):
        raise BadRequest(422, f"log header: players must be a list of {g.num_players} names")
    return g


def _action(rec: dict, game) -> tuple[int, int]:
    """The (seat, action) of an action record, checked against the game, and applied to it."""
    if game.game_over:
        raise BadRequest(422, f"log line {rec['_line']}: an action after the end of the game")
    _int(rec, "i", 0, 10**7)
    seat = _int(rec, "seat", 0, game.num_players - 1)
    action = _int(rec, "action", 0, game.num_actions - 1)
    if seat != game.current:
        raise BadRequest(422, f"log line {rec['_line']}: action {rec['i']} is by player_{seat}, but "
                              f"player_{game.current} is to act: the log does not match the game")
    if not game.legal_mask()[action]:
        raise BadRequest(422, f"log line {rec['_line']}: action {action} ({game.action_name(action)}) is illegal "
                              f"here; legal: {game.describe_legal()}")
    game.apply(action)
    return seat, action
