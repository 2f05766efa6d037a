"""Reading a game log (the JSON lines of ``tarot-play --log`` and of a downloaded web game) for replay.

Nothing in a log is trusted: it is parsed as JSON (never unpickled), every field is checked (its type,
its range, the game's options through the game's own config), every action is re-applied through the
rules (an illegal one is refused with its line number), and an undo must go back to one of the person's
actions. :func:`replay_frames` returns the spectator's table after each action.
"""
from __future__ import annotations

from dataclasses import dataclass

import tarot_env
from agents.human import LOG_VERSION, new_game

from .requests import MAX_LOG, BadRequest, loads_strict

KNOWN = {"header", "action", "undo", "deal_result", "game_end", "next_game", "quit"}
MAX_LINES = 50_000


@dataclass
class Frame:
    """The game after a replayed action: its number in the log, what happened, the game (a clone)."""

    index: int
    text: str
    game: object


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


def replay_frames(records: list[dict]) -> list[Frame]:
    """Re-apply a parsed log: the table after the start and after every action, undo and next game."""
    game = start_game(records[0])
    human = records[0].get("human_seat")
    frames = [Frame(0, "the deal", game.clone())]
    before: dict[int, object] = {}
    for rec in records[1:]:
        t = rec["type"]
        if t == "action":
            game = _action(rec, game, human, before)
            frames.append(Frame(rec["i"] + 1, f"player_{rec['seat']}: {game.action_name(rec['action'])}", game.clone()))
        elif t == "undo":
            game = _undo(rec, before)
            frames.append(Frame(rec["to"], f"undo: back to action {rec['to']}", game.clone()))
        elif t == "next_game":
            game = game.next_game()
            before.clear()
            frames.append(Frame(0, "next game", game.clone()))
    return frames


def _action(rec: dict, game, human, before: dict):
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
    if seat == human:
        before[rec["i"]] = game.clone()
    game.apply(action)
    return game


def _undo(rec: dict, before: dict):
    to = _int(rec, "to", 0, 10**7)
    if to not in before:
        raise BadRequest(422, f"log line {rec['_line']}: undo to action {to}, which is not a move of the person")
    game = before[to]
    for i in [i for i in before if i >= to]:
        del before[i]
    return game.clone()
