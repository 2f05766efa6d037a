"""Human play in the terminal, watching AI games, game logs (JSON lines) and their step-by-step replay.

``tarot-play --game partita --seat 0 --opponents heuristic`` seats a person at ``--seat`` against
policies (``random``, ``heuristic``, ``ppo`` or checkpoint paths, see ``agents.players.registry.load_policy``).
The person sees only what that seat knows (``tarot_env.view.render_view``, RULES.md Part H): the hand
sorted and named by suit, the cards played, the current and the last trick, the scores, the
declarations (Ottocento), announced discards (Partita), the signals with their trick, the tricks won;
then picks a legal move by its number in the list or by its name (``KS``, ``10s``, ``signal:VOID`` or
``void``, ``a_monte``, ``play_on``, ``done``). Anything else is asked again with the reason (not in
the hand, must follow suit, must trump, may not be discarded …); nothing crashes. Each phase and special
move is explained in plain words the first time it comes (``agents/play/explain.py``, from docs/rules);
``help`` lists the commands, ``help <move or phase>`` explains one, ``table`` redraws, ``undo`` (``u``)
takes back the person's last move and says which moves it took back (the game goes back to the person's
previous decision, the policies' moves after it included, and they move again from there), ``quit`` stops.
``--auto-forced`` plays a move by itself when it is the only legal one. The other seats' moves are
told as the table sees them (a hidden discard is not named), each finished trick with its winner, and
at the end of every deal (hand) its scoring, with card names and deals counted from 1; the Millone
scores are per player (``player_0``/``player_1``), the partnership games' per team.

``tarot-play --watch`` (or ``--seat -1``) lets the policies play every seat (the shipped ``ppo`` policies
unless ``--opponents`` names others) and tells the game card by
card: each deal's hands, every move by name, each trick's winner, each deal's scoring (``--view S``:
only what seat S saw; ``--delay SECONDS`` pauses after each trick).

``--log game.jsonl`` saves the game: a header line (game, options, seed, seats), one line per action
(``seat``, ``action`` id, ``name``), one per undo (``to``: the index of the first action taken back),
one per finished deal (its scoring), one at the end. ``tarot-play --replay game.jsonl [--step]``
rebuilds the same game from the header's seed and options and replays it action by action (every
action is checked against the rules), printing the whole table after each (``--step``: wait for
Enter; ``--view S``: show only what seat S saw).
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

import tarot_env
from tarot_env.cards import TRUMP
from tarot_env.checks import check_seed
from tarot_env.config import EnvConfig, make_config, split_options
from tarot_env.engine import NUM_SIGNALS, SIGNAL_NAMES, trick_winner
from tarot_env.view import (
    SIGNAL_WORDS,
    count,
    deal_word,
    format_hand,
    render_view,
    seat_name,
    side_name,
    sides_text,
)

from .explain import Explainer, help_text

LOG_VERSION = 1
__all__ = ["describe_result", "format_hand", "main", "parse_choice", "play_session", "render_view", "replay"]


class Quit(Exception):
    """The person typed quit (or the input ended)."""


UNDO = -1  # ask_human's answer to "undo"


def game_class(game: str):
    """The rules class of ``game`` (from ``tarot_env.GAMES``)."""
    return tarot_env.game_info(game).rules_class()


def new_game(game: str, seed: int | None, options: dict | None = None):
    G = game_class(game)
    game_opts, _env = split_options(dict(options or {}), G.Config, EnvConfig)
    return G(make_config(G.Config, game_opts), check_seed(seed))


# --------------------------------------------------------------------------------------------------
# the scoring of a deal, in words
# --------------------------------------------------------------------------------------------------
# What the numbers of a history record are (the rules modules write them): a side (team; Millone's
# player), a seat, a card id; per-seat lists; the rest is printed as it is.
_SIDE_KEYS = {"fool_team", "matto_team", "discards_to", "last_trick"}
_SEAT_KEYS = {"dealer", "claimant", "owner"}
_CARD_KEYS = {"matto_paid"}
_PER_SEAT_KEYS = {"declared"}
_SKIP = {"tricks", "discards", "discards_hidden", "scores", "deal", "hand", "claim", "thrown_in"}


def _value_text(game, key: str, v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_value_text(game, k, x)}" for k, x in v.items() if x not in (None, False))
    if isinstance(v, bool):
        return "yes" if v else "no"
    if key in _CARD_KEYS and isinstance(v, int):
        return game.pack.names[v] if v >= 0 else "none"
    if key in _SEAT_KEYS and isinstance(v, int):
        return seat_name(v) if v >= 0 else "none"
    if key in _SIDE_KEYS and isinstance(v, int):
        return side_name(game, v) if v >= 0 else "none"
    if isinstance(v, list) and v and all(isinstance(x, (int, type(None))) for x in v):
        shown = ["?" if x is None else str(x) for x in v]  # None: not known to this seat
        if key in _PER_SEAT_KEYS or len(v) != game.num_teams:
            return "  ".join(f"{seat_name(i)}: {x}" for i, x in enumerate(shown))
        return "  ".join(f"{side_name(game, i)}: {x}" for i, x in enumerate(shown))
    if isinstance(v, list):
        return " ".join(str(x) for x in v)
    return str(v)


def describe_result(game, result: dict, seat: int | None = None, cumulative=None) -> str:
    """The scoring of one finished deal (hand), in words, as ``seat`` knows it (``None``: all of it).

    Card ids are named, seats are ``player_N``, sides ``team N`` (Millone: ``player_N``), deals are
    counted from 1; ``cumulative`` is the game score right after this deal (default: the game's now).
    """
    g = game
    if seat is not None:
        result = g.result_view(result, seat)  # the hidden discards of the others left out (RULES.md H)
    word = deal_word(g)
    number = result.get("deal", result.get("hand", 0)) + 1
    cum = g.scores if cumulative is None else cumulative
    if result.get("claim"):  # Millone's game claim (MIL-3)
        c = result["claimant"]
        lines = [(f"-- {word} {number}: {seat_name(c, seat)} claims the game (MIL-3): score "
                  f"{result['claims'][c] - result['combos'][c]} + combinations in hand {result['combos'][c]} = "
                  f"{result['claims'][c]} >= 1000"),
                 f"   shows: {' '.join(result['shown'])}",
                 "   cumulative: " + sides_text(g, cum)]
        return "\n".join(lines)
    if result.get("thrown_in"):
        return (f"-- {word} {number} thrown in (a monte, OTT-3.2): no score  | cumulative: " + sides_text(g, cum))
    lines = [f"-- {word} {number} over: " + "  ".join(
        f"{side_name(g, t)}: {v:+d}" for t, v in enumerate(result["scores"])) + "  | cumulative: " + sides_text(g, cum)]
    for k, v in result.items():
        if k in _SKIP:
            continue
        text = _value_text(g, k, v)
        if text:
            lines.append(f"   {k.replace('_', ' ')}: {text}")
    if "discards" in result:
        d = result["discards"]
        hidden = result.get("discards_hidden", 0)
        if d and isinstance(d[0], list):  # Millone: each player's own
            for p, cards in enumerate(d):
                lines.append(f"   discards of {seat_name(p, seat)}: "
                             + _discards_text(g, cards, hidden[p] if isinstance(hidden, list) else 0))
        else:
            lines.append("   discards: " + _discards_text(g, d, hidden))
    return "\n".join(lines)


def _discards_text(game, known: list[int], hidden: int) -> str:
    parts = [" ".join(game.pack.names[c] for c in known)] if known else []
    return " + ".join(parts + ([f"{hidden} face down"] if hidden else [])) or "none"


def cumulative_after(game, results: list[dict]) -> list[np.ndarray]:
    """The game score right after each of ``results``, the last records of ``game.history``."""
    after = [np.asarray(game.scores).copy()]
    for r in reversed(results[1:]):
        after.append(after[-1] - np.asarray(r["scores"]))
    return after[::-1]


# --------------------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------------------
def legal_list(game) -> list[int]:
    return [int(a) for a in np.flatnonzero(game.legal_mask())]


def action_label(game, a: int) -> str:
    return game.action_name(a)


def closing_trick(game, seat: int, action: int) -> list[tuple[int, int]] | None:
    """The cards of the trick that ``seat``'s ``action`` completes, in play order, or None (call it before
    applying the action)."""
    if game.phase.name != "PLAY" or action >= game.pack.size or len(game.trick) != game.num_players - 1:
        return None
    return [*game.trick, (seat, action)]


def closed_trick_winner(game, closing: list[tuple[int, int]], tricks_before: int) -> int:
    """The seat that won ``closing`` (:func:`closing_trick`), once the action is applied. The last trick of a
    deal is no longer in ``game.tricks`` (the next deal is dealt), so its winner is worked out from the cards,
    by the one trick order (B.4.4)."""
    return game.tricks[-1][1] if len(game.tricks) == tricks_before + 1 else trick_winner(game.pack, closing)


def describe_move(game, seat: int, a: int, viewer: int | None = None) -> str:
    """``seat``'s action ``a`` (not yet applied) as ``viewer`` sees it: by name, except another seat's
    hidden discard, told as "discards a card" (``viewer=None``: a spectator who sees everything)."""
    phase = game.phase.name
    name = game.action_name(a)
    N = game.pack.size
    who = seat_name(seat, viewer)
    known = viewer is None or viewer == seat
    if "DISCARD" in phase:
        if game.name == "partita" and game.pack.suit[a] == TRUMP:
            return f"{who} discards {name} (a trump: announced, PAR-4.5)"
        return f"{who} discards {name} (face down)" if known else f"{who} discards a card"
    if N <= a < N + NUM_SIGNALS:
        return f"{who} signals {SIGNAL_WORDS[a - N]}"
    if phase == "DECLARE":
        return f"{who} " + ("ends the declaration" if a >= N else f"declares {name}")
    if phase == "A_MONTE":
        return f"{who} says {name.replace('_', ' ')}"
    return f"{who} plays {name}"


def public_move(game, seat: int, a: int) -> str:
    """What the other seats see of ``seat``'s action ``a`` (a hidden discard is not named)."""
    return describe_move(game, seat, a, viewer=-1)


def why_illegal(game, a: int) -> str:
    """Why action ``a`` is not legal now, in words (the legal ones are listed by the caller)."""
    g = game
    N = g.pack.size
    phase = g.phase.name
    seat = g.current
    if not 0 <= a < g.num_actions:
        return f"there is no action {a}"
    name = g.action_name(a)
    if a < N:
        if not g.hands[seat, a]:
            return f"you do not hold {name}"
        if phase == "PLAY":
            led = g.led_suit()
            suit = g.pack.suit_names
            if g.pending_signal >= 0 and g.legal_cards(seat)[a]:
                return f"{name} cannot carry the signal you chose (only a card of a suit whose top card is out)"
            if led is not None and g.hands[seat][g.pack.suit == led].any():
                return f"you must follow suit ({suit[led]})"
            if led is not None and g.hands[seat][g.pack.suit == TRUMP].any():
                return f"you cannot follow {suit[led]}, so you must play a trump"
        if "DISCARD" in phase:
            rule = {"partita": "Kings, I, XXI and the Fool may never be discarded, and trumps only when "
                               "you lack other cards (PAR-4.3, PAR-4.4)",
                    "ottocento": "5-point cards (Kings, Angel, World, Begato, Matto) may not be discarded "
                                 "(OTT-4.2)",
                    "millone": "Honours (Angel, World, Begato, Matto) and Kings may not be discarded (MIL-2.4)"}
            return f"{name} may not be discarded: {rule.get(g.name, '')}"
        if phase == "DECLARE":
            return f"{name} does not count in a scoring combination of your hand (OTT-5.2)"
        if phase == "A_MONTE":
            return "answer a_monte or play_on first"
        return f"{name} is not legal now"
    if N <= a < N + NUM_SIGNALS:
        if phase != "PLAY":
            return "signals go with a card you play"
        if g.pending_signal >= 0:
            return "you already chose a signal for this card"
        return "you may not signal now" + (" (only eldest signals, OTT-8.3)" if g.name == "ottocento" else "")
    if phase == "DECLARE":
        return "your revealed cards do not all score yet: reveal more, or the declaration is not valid"
    return f"{name} is not legal in phase {phase}"


HELP = ("type the number of a move or its name (e.g. 3, KS, 10s, void, a_monte, done); "
        "'table' redraws the table, 'hand' shows your hand, 'undo' (or 'u') takes back your last move and the "
        "others' moves after it, 'help' this text, 'help <move or phase>' explains it (e.g. help discard, "
        "help a_monte, help signal), 'quit' stops")


def parse_choice(game, text: str, legal: list[int]) -> tuple[int | None, str]:
    """(action, '') for a legal choice, else (None, the reason). Never raises."""
    t = text.strip()
    if not t:
        return None, "empty input"
    if t.isdigit():
        k = int(t)
        if 1 <= k <= len(legal):
            return legal[k - 1], ""
        return None, f"{k} is not in the list (1..{len(legal)})"
    low = t.lower()
    aliases = {"done": "declare_done", "declare": "declare_done", "monte": "a_monte", "a monte": "a_monte",
               "pass": "play_on", "no": "play_on", "yes": "a_monte"}
    low = aliases.get(low, low)
    for k, w in enumerate(SIGNAL_WORDS):
        if low in (w.lower(), SIGNAL_NAMES[k].lower()):
            low = SIGNAL_NAMES[k].lower()
    a = None
    for x in range(game.num_actions):
        if game.action_name(x).lower() == low:
            a = x
            break
    if a is None:
        return None, f"{t!r} is not a card or a move of {game.name}"
    if a not in legal:
        return None, why_illegal(game, a)
    return a, ""


def ask_human(game, seat: int, input_fn: Callable[[str], str], out: Callable[[str], None],
              labels: list[str] | None, can_undo: bool = False, explainer: Explainer | None = None) -> int:
    """The person's move: a legal action id, or ``UNDO`` when asked to and ``can_undo``. ``explainer``: the
    phase and the special moves are explained the first time they come."""
    legal = legal_list(game)
    out(render_view(game, seat, labels))
    for line in explainer.first_time(game.phase.name, [game.action_name(a) for a in legal]) if explainer else ():
        out(line)
    out("  your hand: " + format_hand(game, game.hands[seat]))
    out("  legal moves: " + "  ".join(f"{k + 1}) {action_label(game, a)}" for k, a in enumerate(legal)))
    while True:
        try:
            text = input_fn(f"player_{seat} (you), your move> ")
        except EOFError:
            raise Quit() from None
        cmd = text.strip().lower()
        if cmd in ("q", "quit", "exit"):
            raise Quit()
        if cmd in ("h", "help", "?"):
            out(HELP)
            continue
        if cmd.startswith(("help ", "h ", "? ")):
            out(help_text(game.name, cmd.split(None, 1)[1]))
            continue
        if cmd in ("t", "table"):
            out(render_view(game, seat, labels))
            continue
        if cmd == "hand":
            out("  your hand: " + format_hand(game, game.hands[seat]))
            continue
        if cmd in ("u", "undo"):
            if can_undo:
                return UNDO
            out("  nothing to undo: this is your first move of the game")
            continue
        a, reason = parse_choice(game, text, legal)
        if a is not None:
            return a
        out(f"  not accepted: {reason}. Legal: " + ", ".join(
            f"{k + 1}) {action_label(game, x)}" for k, x in enumerate(legal)))


# --------------------------------------------------------------------------------------------------
# the session
# --------------------------------------------------------------------------------------------------
class GameLog:
    """JSON-lines writer (one object per line, flushed after each)."""

    def __init__(self, path: str | None):
        self.f: TextIO | None = open(path, "w") if path else None

    def write(self, obj: dict) -> None:
        if self.f:
            self.f.write(json.dumps(obj) + "\n")
            self.f.flush()

    def close(self) -> None:
        if self.f:
            self.f.close()


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def play_session(game_name: str, seats: dict[int, Any], human_seat: int | None = None, seed: int | None = 0,
                 options: dict | None = None, games: int = 1, log_path: str | None = None,
                 labels: list[str] | None = None, input_fn: Callable[[str], str] = input,
                 out: Callable[[str], None] = print, max_actions: int = 1_000_000, *,
                 watch: bool = False, view: int | None = None, auto_forced: bool = False,
                 delay: float = 0.0):
    """Play ``games`` games; ``seats[s]`` is the policy of seat ``s`` (the human's seat needs none).

    ``human_seat=None``: the policies play alone, silently (a log, a test), or told card by card with
    ``watch=True`` (everything, or what seat ``view`` sees). ``auto_forced``: the person's only legal
    move is played without asking. ``undo`` at the person's prompt goes back to the person's previous
    decision of this game (the game state is a clone taken there). Returns the last game object.
    """
    game = new_game(game_name, seed, options)
    P = game.num_players
    labels = labels or [("you" if s == human_seat else type(seats.get(s)).__name__) for s in range(P)]
    log = GameLog(log_path)
    log.write({"type": "header", "version": LOG_VERSION, "game": game_name, "seed": seed,
               "options": dict(options or {}), "config": game.config.to_dict(), "games": games,
               "human_seat": human_seat, "players": labels})
    t = _Table(game, seats, human_seat, labels, log, input_fn, out,
               viewer=human_seat if human_seat is not None else view, narrate=human_seat is not None or watch,
               watch=watch, auto_forced=auto_forced, delay=delay)
    try:
        for gi in range(games):
            if gi:
                t.game = t.game.next_game()
                log.write({"type": "next_game", "game_index": gi})
                out(f"\n=== game {gi + 1} ===")
            t.play_game(max_actions)
    except Quit:
        out("bye")
        log.write({"type": "quit", "at": t.step})
    finally:
        log.close()
    return t.game


class _Table:
    """One :func:`play_session` in progress: the game, the action count ``step`` (over all its games),
    the results already told (``seen``), the person's decisions of this game (for ``undo``) and the
    hidden discards not yet told."""

    def __init__(self, game, seats: dict[int, Any], human_seat: int | None, labels: list[str], log: GameLog,
                 input_fn: Callable[[str], str], out: Callable[[str], None], *, viewer: int | None,
                 narrate: bool, watch: bool, auto_forced: bool, delay: float):
        self.game, self.seats, self.human_seat, self.labels, self.log = game, seats, human_seat, labels, log
        self.input_fn, self.out, self.viewer, self.narrate, self.watch = input_fn, out, viewer, narrate, watch
        self.auto_forced, self.delay = auto_forced, delay
        self.step = 0
        self.seen = 0
        self.hidden: dict[int, int] = {}
        self.decisions: list[tuple[int, Any]] = []  # (step, game clone) at each of the person's decisions
        self.moves: list[tuple[int, str]] = []  # (step, the move as the person's seat saw it) since the game began
        self.explainer = Explainer(game.name)

    def play_game(self, max_actions: int) -> None:
        """Play the current game to its end (or to ``max_actions`` actions in all) and tell the result."""
        self.seen = len(self.game.history)
        self.decisions = []
        self.moves = []
        if self.watch and self.human_seat is None:
            self.out(render_view(self.game, self.viewer, self.labels))
        while not self.game.game_over and self.step < max_actions:
            s = self.game.current
            a = self.human_move(s) if s == self.human_seat else self.policy_move(s)
            if a is not None:  # None: the person took back a move
                self.apply(s, a)
        game = self.game
        winner = game.winner
        self.out("=== game over: scores " + sides_text(game, game.scores)
                 + (f"; {side_name(game, winner)} wins" if winner is not None and winner >= 0 else "; a draw"))
        self.log.write({"type": "game_end", "scores": game.scores.tolist(), "winner": winner})

    def human_move(self, s: int) -> int | None:
        """The person's action (their only legal one with ``auto_forced``), or None after an ``undo``: the
        game is back at their previous decision, which is asked again."""
        game, out = self.game, self.out
        legal = legal_list(game)
        if self.auto_forced and len(legal) == 1:
            _flush_hidden(self.hidden, out)
            out(f"  {describe_move(game, s, legal[0], s)} (the only legal move)")
            return legal[0]
        _flush_hidden(self.hidden, out)
        self.decisions.append((self.step, game.clone()))
        a = ask_human(game, s, self.input_fn, out, self.labels, can_undo=len(self.decisions) > 1,
                      explainer=self.explainer)
        if a != UNDO:
            return a
        self.decisions.pop()  # this decision
        self.step, self.game = self.decisions.pop()  # the previous one, asked again
        self.seen = len(self.game.history)
        self.log.write({"type": "undo", "to": self.step})
        taken = [text for step, text in self.moves if step >= self.step]
        self.moves = [(step, text) for step, text in self.moves if step < self.step]
        out(f"  undone: back to your previous move (action {self.step}); taken back, {count(len(taken), 'move')}: "
            + "; ".join(taken))
        return None

    def policy_move(self, s: int) -> int:
        """Seat ``s``'s policy's action (checked legal), told when the game is narrated."""
        game = self.game
        pol = self.seats[s]
        if getattr(pol, "needs_game", False):  # the search player (agents/players/pimc.py)
            a = int(pol.act_game(game))
        else:
            a = int(pol.act(game.observation(s), game.legal_mask()))
        if not game.legal_mask()[a]:
            raise RuntimeError(f"policy of seat {s} chose illegal action {a}")
        if self.narrate:
            msg = describe_move(game, s, a, self.viewer)
            if msg.endswith("discards a card"):  # hidden discards: one line per player
                self.hidden[s] = self.hidden.get(s, 0) + 1
            else:
                _flush_hidden(self.hidden, self.out)
                self.out("  " + msg)
        return a

    def apply(self, s: int, a: int) -> None:
        """Play action ``a`` of seat ``s``, log it, and tell a finished trick and the deals' results."""
        game, out, viewer = self.game, self.out, self.viewer
        name = game.action_name(a)
        tricks_before, phase_before, closing = len(game.tricks), game.phase, closing_trick(game, s, a)
        if self.human_seat is not None:  # for undo: what it takes back, as the person's seat saw it
            self.moves.append((self.step, describe_move(game, s, a, self.human_seat)))
        game.apply(a)
        self.log.write({"type": "action", "i": self.step, "seat": s, "action": a, "name": name})
        self.step += 1
        if self.narrate and closing:  # (the last trick of a deal too, though the next deal is dealt)
            w = closed_trick_winner(game, closing, tricks_before)
            out(f"  trick {tricks_before + 1}: {'  '.join(f'player_{x}: {game.pack.names[c]}' for x, c in closing)}"
                f" -> won by {seat_name(w, viewer)}")
            if self.delay > 0:
                time.sleep(self.delay)
        new = game.history[self.seen:]
        for res, cum in zip(new, cumulative_after(game, new)):
            _flush_hidden(self.hidden, out)
            out(describe_result(game, res, viewer, cum))
            self.log.write({"type": "deal_result", "result": _jsonable(res)})
        if self.watch and self.human_seat is None and not game.game_over and (new or game.phase != phase_before):
            out(render_view(game, viewer, self.labels))  # the next deal's hands, or the next phase
        self.seen = len(game.history)


def _flush_hidden(hidden: dict[int, int], out) -> None:
    for s, k in sorted(hidden.items()):
        out(f"  player_{s} discards {k} card{'s' if k > 1 else ''} face down")
    hidden.clear()


def read_log(path: str) -> list[dict]:
    """The records of a game log; a ``ValueError`` naming the file when it is missing or a line is not JSON."""
    try:
        with open(path) as f:
            lines = [line for line in f if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read the game log {path!r}: {e.strerror if isinstance(e, OSError) else e}") from None
    records = []
    for n, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except ValueError:
            raise ValueError(f"game log {path!r}, line {n}: not JSON (a log is what tarot-play --log writes)") from None
    return records


def replay(path: str, out: Callable[[str], None] = print, step: bool = False, seat: int | None = None,
           input_fn: Callable[[str], str] = input, quiet: bool = False):
    """Rebuild the logged game(s) from the header and re-apply every action (checked), taking back the
    actions an ``undo`` record names. ``seat``: show only what that seat saw. Returns the game."""
    lines = read_log(path)
    if not lines or lines[0].get("type") != "header":
        raise ValueError(f"{path}: not a tarot game log (first line must be the header)")
    h = lines[0]
    if h.get("version") != LOG_VERSION:
        raise ValueError(f"{path}: log version {h.get('version')!r}; this version reads {LOG_VERSION}")
    game = new_game(h["game"], h["seed"], h.get("options"))
    labels = h.get("players")
    human = h.get("human_seat")
    before: dict[int, Any] = {}  # the game before each of the person's actions (for undo records)
    if not quiet:
        out(f"replaying {h['game']} seed {h['seed']} options {h.get('options')}")
        out(render_view(game, seat, labels))
    for rec in lines[1:]:
        t = rec.get("type")
        if t == "next_game":
            game = game.next_game()
            before.clear()
            if not quiet:
                out(f"\n=== game {rec.get('game_index', 0) + 1} ===")
        elif t == "undo":
            game = _replay_undo(path, rec, before)
            if not quiet:
                out(f"\n[undo] back to action {rec.get('to')}")
                out(render_view(game, seat, labels))
        elif t == "action":
            told, new = _replay_action(path, rec, game, human, before, seat)
            if not quiet:
                step = _show_replayed(game, rec, told, new, out, seat, labels, step, input_fn)
    return game


def _replay_undo(path: str, rec: dict, before: dict[int, Any]):
    """The game back at the person's action ``rec["to"]`` (dropping the clones from there on)."""
    to = rec.get("to")
    if to not in before:
        raise ValueError(f"{path}: undo to action {to!r}, which is not a move of the person in this "
                         f"game: the log does not match the game")
    game = before[to]
    for i in [i for i in before if i >= to]:
        del before[i]
    return game


def _replay_action(path: str, rec: dict, game, human: int | None, before: dict[int, Any],
                   seat: int | None) -> tuple[str, list]:
    """Re-apply a logged action (checked: the seat must be the one to act); returns how ``seat`` saw it
    told and the deal results it finished."""
    if rec["seat"] != game.current:
        raise ValueError(f"{path}: action {rec['i']} is by player_{rec['seat']}, but player_{game.current} "
                         f"is to act: the log does not match the game")
    if rec["seat"] == human:
        before[rec["i"]] = game.clone()
    told = describe_move(game, rec["seat"], rec["action"], seat)
    seen = len(game.history)
    game.apply(rec["action"])
    return told, game.history[seen:]


def _show_replayed(game, rec: dict, told: str, new: list, out: Callable[[str], None], seat: int | None,
                   labels, step: bool, input_fn: Callable[[str], str]) -> bool:
    """Tell a replayed action and the table after it; with ``step`` wait for Enter. Returns whether to
    keep waiting (no more after the end of the input)."""
    out(f"\n[{rec['i']}] {told}")
    out(render_view(game, seat, labels))
    for res, cum in zip(new, cumulative_after(game, new)):
        out(describe_result(game, res, seat, cum))
    if step:
        try:
            input_fn("(Enter: next step) ")
        except EOFError:
            step = False
    return step


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None, input_fn: Callable[[str], str] | None = None,
         out: Callable[[str], None] | None = None) -> int:
    """``tarot-play`` (``agents.cli.play_parser``): 0, or 2 after one error line on stderr."""
    from ..parsers import play_parser

    return run_cli(play_parser().parse_args(argv), input_fn, out)


def run_cli(ns, input_fn: Callable[[str], str] | None = None, out: Callable[[str], None] | None = None) -> int:
    """Play, watch or replay as the parsed command line ``ns`` says."""
    input_fn = input_fn or input
    out = out or (lambda s: print(s, flush=True))
    try:
        if ns.replay:
            replay(ns.replay, out, step=ns.step, seat=ns.view, input_fn=input_fn)
            return 0
        _play_from_args(ns, input_fn, out)
    except ValueError as e:
        print(f"tarot-play: error: {e}", file=sys.stderr)
        return 2
    return 0


def _check_seats(ns, P: int) -> int | None:
    """The person's seat (None: watching), after checking ``--seat``, ``--view`` and ``--delay``."""
    human = None if (ns.watch or ns.seat < 0) else ns.seat
    if human is not None and not 0 <= human < P:
        raise ValueError(f"--seat must be 0..{P - 1} for {ns.game} (or -1 to watch)")
    if ns.view is not None and not 0 <= ns.view < P:
        raise ValueError(f"--view must be a seat 0..{P - 1} of {ns.game}")
    if ns.delay < 0:
        raise ValueError(f"--delay must be >= 0 seconds, got {ns.delay}")
    return human


def seat_players(ns, human: int | None, P: int) -> list[str | None]:
    """The player spec of each seat (None: the person): ``--opponents`` (default ``heuristic``; watching,
    ``ppo``, the shipped policies), ``--partner`` at the person's partner's seat."""
    others = ns.opponents or ("ppo" if human is None else "heuristic")
    specs: list[str | None] = []
    for s in range(P):
        partner = ns.partner and human is not None and P == 4 and s == (human + 2) % 4
        specs.append(None if s == human else ns.partner if partner else others)
    return specs


def _play_from_args(ns, input_fn: Callable[[str], str], out: Callable[[str], None]) -> None:
    from ..evaluation.arena import _parse_options
    from ..players.registry import load_policy, policy_label

    options = _parse_options(ns.option)
    G = game_class(ns.game)
    P = G.num_players
    human = _check_seats(ns, P)
    seed = check_seed(ns.seed, "--seed") if ns.seed is not None else int(np.random.default_rng().integers(2**31))
    specs = seat_players(ns, human, P)
    seats = {s: load_policy(spec, ns.game, options=options, seed=seed + s) for s, spec in enumerate(specs) if spec}
    labels = ["you" if spec is None else policy_label(spec) for spec in specs]
    players = ", ".join(f"player_{s} {label}" for s, label in enumerate(labels))
    if human is None:
        out(f"{ns.game}, seed {seed}: watching {players}"
            + (f", as player_{ns.view} sees it" if ns.view is not None else ""))
    else:
        team = "" if G.num_teams == P else f" (team {G.team_of[human]})"  # Millone: no teams
        out(f"{ns.game}, seed {seed}: you are player_{human}{team}; {players}")
        out(HELP)
    play_session(ns.game, seats, human, seed, options, ns.games, ns.log, labels, input_fn, out,
                 watch=human is None, view=ns.view, auto_forced=ns.auto_forced, delay=ns.delay)


if __name__ == "__main__":
    from tarot_env.commands import run_command

    raise SystemExit(run_command("tarot-play", main))
