"""Human play in the terminal, game logs (JSON lines) and their step-by-step replay.

``tarot-play --game partita --seat 0 --opponents heuristic`` seats a person at ``--seat`` against
policies (``random``, ``heuristic`` or checkpoint paths, see ``agents.registry.load_policy``). The
person sees only what that seat knows: the hand sorted and named by suit, the current and the last
trick, the scores, the declarations (Ottocento), announced discards (Partita), the signals, the
tricks won; then picks a legal move by its number in the list or by its name (``KS``, ``10s``,
``signal:VOID`` or ``void``, ``a_monte``, ``play_on``, ``done``). Anything else is asked again with
the reason (not in the hand, must follow suit, must trump, may not be discarded …); nothing crashes.
``help`` lists the commands, ``table`` redraws, ``quit`` stops. At the end of every deal (hand) the
scoring is shown.

``--log game.jsonl`` saves the game: a header line (game, options, seed, seats), one line per action
(``seat``, ``action`` id, ``name``), one per finished deal (its scoring), one at the end.
``tarot-play --replay game.jsonl [--step]`` rebuilds the same game from the header's seed and options
and replays it action by action (every action is checked against the rules), printing the whole
table after each (``--step``: wait for Enter; ``--seat S``: show only what seat S saw).
"""
from __future__ import annotations

import importlib
import json
import sys
from typing import Any, Callable, TextIO

import numpy as np

from tarot_env.cards import EXCUSE, TRUMP
from tarot_env.config import make_config, split_options, EnvConfig
from tarot_env.engine import NUM_SIGNALS, SIGNAL_NAMES

LOG_VERSION = 1
SIGNAL_WORDS = ["VOID", "LEAD_TRUMPS", "WIN_AND_RETURN"]


class Quit(Exception):
    """The person typed quit (or the input ended)."""


def game_class(game: str):
    mod = importlib.import_module(f"tarot_env.envs.{game}")
    return mod.raw_env.Game


def new_game(game: str, seed: int | None, options: dict | None = None):
    G = game_class(game)
    game_opts, _env = split_options(dict(options or {}), G.Config, EnvConfig)
    return G(make_config(G.Config, game_opts), seed)


# --------------------------------------------------------------------------------------------------
# what a seat sees
# --------------------------------------------------------------------------------------------------
def format_hand(game, cards) -> str:
    """Cards grouped by suit, in the pack's order (trumps high to low, the excuse, each suit)."""
    pack = game.pack
    ids = np.flatnonzero(cards) if np.asarray(cards).dtype == bool else np.sort(np.asarray(cards, dtype=int))
    groups: dict[int, list[str]] = {}
    for c in ids:
        groups.setdefault(int(pack.suit[c]), []).append(pack.names[c])
    order = [TRUMP, EXCUSE, 0, 1, 2, 3]
    return "  ".join(f"{pack.suit_names[s]}: {' '.join(groups[s])}" for s in order if s in groups) or "(none)"


def _seat_name(seat: int, me: int | None) -> str:
    return f"player_{seat}" + (" (you)" if seat == me else "")


def render_view(game, seat: int | None, labels: list[str] | None = None) -> str:
    """The table as ``seat`` sees it (``None``: everything, for replays)."""
    g = game
    P = g.num_players
    names = g.pack.names
    lines = [f"== {g.name.capitalize()} | scores: " + "  ".join(
        f"team {t}: {int(s)}" for t, s in enumerate(g.scores)) + f" | phase {g.phase.name}"
        + (f" | stock: {int(g.stock.sum())} cards" if g.name == "millone" and g.stock.any() else "")]
    dealer = getattr(g, "dealer", None)
    for s in range(P):
        tags = [f"team {g.team_of[s]}"]
        if labels:
            tags.append(labels[s])
        if s == dealer:
            tags.append("dealer")
        if not g.game_over and s == g.current:
            tags.append("to act")
        line = f"  {_seat_name(s, seat)} [{', '.join(tags)}]: {g.hand_sizes[s]} cards"
        if seat is None or s == seat:
            line += " — " + format_hand(g, g.hands[s])
        extra = _public_extra(g, s, seat)
        lines.append(line + extra)
    if g.trick:
        lines.append("  trick: " + "  ".join(f"player_{s}: {names[c]}" for s, c in g.trick))
    if g.tricks:
        last, w = g.tricks[-1]
        lines.append("  last trick: " + "  ".join(f"player_{s}: {names[c]}" for s, c in last)
                     + f"  -> won by player_{w}")
    if g.signals:
        lines.append("  signals: " + "  ".join(
            f"player_{s} with {names[c]}: {SIGNAL_WORDS[k]}" for s, c, k in g.signals))
    if g.pending_signal >= 0 and (seat is None or seat == g.current):
        lines.append(f"  your signal for the next card: {SIGNAL_WORDS[g.pending_signal]}")
    lines.append("  tricks won: " + "  ".join(f"team {t}: {int(n)}" for t, n in enumerate(g.tricks_won)))
    return "\n".join(lines)


def _public_extra(g, s: int, viewer: int | None) -> str:
    """Per-seat public information (and private, when the viewer is that seat or None)."""
    names = g.pack.names
    parts = []
    if g.name == "ottocento":
        said = g.a_monte_said[s]
        if said.any():
            parts.append("said a monte" if said[0] else "said play on")
        if g.declared[s].any():
            pts = g.declared_points[s]
            parts.append("declared: " + " ".join(names[c] for c in np.flatnonzero(g.declared[s]))
                         + (f" = {pts} points" if pts else " (declaring)"))
    if g.name == "partita" and s == g.dealer and getattr(g, "public_discards", None) is not None \
            and g.public_discards.any():
        parts.append("announced discard: " + " ".join(names[c] for c in np.flatnonzero(g.public_discards)))
    if g.name == "millone":
        if g.claim_shown[s].any():
            parts.append("claimed with: " + " ".join(names[c] for c in np.flatnonzero(g.claim_shown[s])))
        if g.exchange_owed == s:
            parts.append("owes a card for the Matto")
    if (viewer is None or viewer == s) and g.discards[s].any():
        parts.append("discarded (hidden): " + " ".join(names[c] for c in np.flatnonzero(g.discards[s])))
    if g.name == "millone" and g.exchanged.any() and s == 0:
        parts.append("card paid for the Matto: " + " ".join(names[c] for c in np.flatnonzero(g.exchanged)))
    return "".join("  | " + p for p in parts)


def describe_result(game, result: dict) -> str:
    """The scoring of one finished deal (hand), in words."""
    names = game.pack.names
    skip = {"tricks", "discards"}
    lines = [f"-- deal over: " + "  ".join(f"team {t}: {v:+d}" for t, v in enumerate(result["scores"]))
             + "  | cumulative: " + "  ".join(f"team {t}: {int(s)}" for t, s in enumerate(game.scores))]
    for k, v in result.items():
        if k in skip or k == "scores":
            continue
        lines.append(f"   {k}: {v}")
    if "discards" in result and result["discards"]:
        d = result["discards"]
        flat = d if d and isinstance(d[0], int) else [c for part in d for c in part]
        lines.append("   discards: " + " ".join(names[c] for c in flat))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------------------
def legal_list(game) -> list[int]:
    return [int(a) for a in np.flatnonzero(game.legal_mask())]


def action_label(game, a: int) -> str:
    return game.action_name(a)


def public_move(game, seat: int, a: int) -> str:
    """What the table sees of ``seat``'s action ``a`` (a hidden discard is not named)."""
    phase = game.phase.name
    name = game.action_name(a)
    N = game.pack.size
    if "DISCARD" in phase:
        if game.name == "partita" and game.pack.suit[a] == TRUMP:
            return f"player_{seat} discards {name} (a trump: announced, PAR-4.5)"
        return f"player_{seat} discards a card"
    if N <= a < N + NUM_SIGNALS:
        return f"player_{seat} signals {SIGNAL_WORDS[a - N]}"
    if phase == "DECLARE":
        return f"player_{seat} " + ("ends the declaration" if a >= N else f"declares {name}")
    if phase == "A_MONTE":
        return f"player_{seat} says {name.replace('_', ' ')}"
    return f"player_{seat} plays {name}"


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
        "'table' redraws the table, 'hand' shows your hand, 'help' this text, 'quit' stops")


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
              labels: list[str] | None) -> int:
    legal = legal_list(game)
    out(render_view(game, seat, labels))
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
        if cmd in ("t", "table"):
            out(render_view(game, seat, labels))
            continue
        if cmd == "hand":
            out("  your hand: " + format_hand(game, game.hands[seat]))
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
                 out: Callable[[str], None] = print, max_actions: int = 1_000_000):
    """Play ``games`` games; ``seats[s]`` is the policy of seat ``s`` (the human's seat needs none).

    Returns the last game object. ``human_seat=None`` lets the policies play alone (a demo, or a log).
    """
    game = new_game(game_name, seed, options)
    P = game.num_players
    labels = labels or [("you" if s == human_seat else type(seats.get(s)).__name__) for s in range(P)]
    log = GameLog(log_path)
    log.write({"type": "header", "version": LOG_VERSION, "game": game_name, "seed": seed,
               "options": dict(options or {}), "config": game.config.to_dict(), "games": games,
               "human_seat": human_seat, "players": labels})
    step = 0
    hidden: dict[int, int] = {}
    try:
        for gi in range(games):
            if gi:
                game = game.next_game()
                log.write({"type": "next_game", "game_index": gi})
                out(f"\n=== game {gi + 1} ===")
            seen = len(game.history)
            while not game.game_over and step < max_actions:
                s = game.current
                if s == human_seat:
                    _flush_hidden(hidden, out)
                    a = ask_human(game, s, input_fn, out, labels)
                else:
                    pol = seats[s]
                    if getattr(pol, "needs_game", False):  # the search player (agents/pimc.py)
                        a = int(pol.act_game(game))
                    else:
                        a = int(pol.act(game.observation(s), game.legal_mask()))
                    if not game.legal_mask()[a]:
                        raise RuntimeError(f"policy of seat {s} chose illegal action {a}")
                    if human_seat is not None:
                        msg = public_move(game, s, a)
                        if msg.endswith("discards a card"):  # hidden discards: one line per player
                            hidden[s] = hidden.get(s, 0) + 1
                        else:
                            _flush_hidden(hidden, out)
                            out("  " + msg)
                name = game.action_name(a)
                tricks_before = len(game.tricks)
                game.apply(a)
                log.write({"type": "action", "i": step, "seat": s, "action": a, "name": name})
                step += 1
                if human_seat is not None and len(game.tricks) == tricks_before + 1:
                    last, w = game.tricks[-1]
                    out(f"  trick: {'  '.join(f'player_{x}: {game.pack.names[c]}' for x, c in last)}"
                        f" -> won by {_seat_name(w, human_seat)}")
                for res in game.history[seen:]:
                    _flush_hidden(hidden, out)
                    out(describe_result(game, res))
                    log.write({"type": "deal_result", "result": _jsonable(res)})
                seen = len(game.history)
            winner = game.winner
            out(f"=== game over: scores " + "  ".join(f"team {t}: {int(x)}" for t, x in enumerate(game.scores))
                + (f"; team {winner} wins" if winner is not None and winner >= 0 else "; a draw"))
            log.write({"type": "game_end", "scores": game.scores.tolist(), "winner": winner})
    except Quit:
        out("bye")
        log.write({"type": "quit", "at": step})
    finally:
        log.close()
    return game


def _flush_hidden(hidden: dict[int, int], out) -> None:
    for s, k in sorted(hidden.items()):
        out(f"  player_{s} discards {k} card{'s' if k > 1 else ''} face down")
    hidden.clear()


def read_log(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def replay(path: str, out: Callable[[str], None] = print, step: bool = False, seat: int | None = None,
           input_fn: Callable[[str], str] = input, quiet: bool = False):
    """Rebuild the logged game(s) from the header and re-apply every action (checked). Returns the game."""
    lines = read_log(path)
    if not lines or lines[0].get("type") != "header":
        raise ValueError(f"{path}: not a tarot game log (first line must be the header)")
    h = lines[0]
    if h.get("version") != LOG_VERSION:
        raise ValueError(f"{path}: log version {h.get('version')!r}; this version reads {LOG_VERSION}")
    game = new_game(h["game"], h["seed"], h.get("options"))
    labels = h.get("players")
    if not quiet:
        out(f"replaying {h['game']} seed {h['seed']} options {h.get('options')}")
        out(render_view(game, seat, labels))
    for rec in lines[1:]:
        t = rec.get("type")
        if t == "next_game":
            game = game.next_game()
            if not quiet:
                out(f"\n=== game {rec.get('game_index', 0) + 1} ===")
        elif t == "action":
            if rec["seat"] != game.current:
                raise ValueError(f"{path}: action {rec['i']} is by player_{rec['seat']}, but player_{game.current} "
                                 f"is to act: the log does not match the game")
            if seat is not None and rec["seat"] != seat:  # another seat's move, as ``seat`` saw it
                told = public_move(game, rec["seat"], rec["action"])
            else:
                told = f"player_{rec['seat']}: {rec['name']}"
            game.apply(rec["action"])
            if not quiet:
                out(f"\n[{rec['i']}] {told}")
                out(render_view(game, seat, labels))
                if step:
                    try:
                        input_fn("(Enter: next step) ")
                    except EOFError:
                        step = False
        elif t == "deal_result" and not quiet:
            out(describe_result(game, rec["result"]))
    return game


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None, input_fn: Callable[[str], str] | None = None,
         out: Callable[[str], None] | None = None) -> int:
    import argparse

    from .arena import _parse_options
    from .registry import load_policy, policy_label

    p = argparse.ArgumentParser(prog="tarot-play", description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="partita", help="partita, ottocento or millone")
    p.add_argument("--seat", type=int, default=0, help="your seat (0..3; Millone 0..1); -1: watch the policies")
    p.add_argument("--opponents", default="heuristic", help="policy of the other seats: random, heuristic, pimc[:worlds=N,rollout=R] or a checkpoint")
    p.add_argument("--partner", default=None, help="policy of your partner's seat (4-player games); default: --opponents")
    p.add_argument("--seed", type=int, default=None, help="the deal seed (default: random)")
    p.add_argument("--games", type=int, default=1)
    p.add_argument("--log", default=None, help="save the game as JSON lines to this file")
    p.add_argument("--replay", default=None, help="replay a saved log instead of playing")
    p.add_argument("--step", action="store_true", help="with --replay: wait for Enter after each action")
    p.add_argument("--view", type=int, default=None, help="with --replay: show only what this seat saw")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="rules option, e.g. -o deals_per_game=1 or -o target_score=300")
    ns = p.parse_args(argv)
    input_fn = input_fn or input
    out = out or (lambda s: print(s, flush=True))
    try:
        if ns.replay:
            replay(ns.replay, out, step=ns.step, seat=ns.view, input_fn=input_fn)
            return 0
        import tarot_env

        if ns.game not in tarot_env.ENV_IDS:
            raise ValueError(f"unknown game {ns.game!r}; games are {sorted(tarot_env.ENV_IDS)}")
        options = _parse_options(ns.option)
        G = game_class(ns.game)
        P = G.num_players
        human = None if ns.seat < 0 else ns.seat
        if human is not None and not 0 <= human < P:
            raise ValueError(f"--seat must be 0..{P - 1} for {ns.game} (or -1 to watch)")
        seed = ns.seed if ns.seed is not None else int(np.random.default_rng().integers(2**31))
        seats, labels = {}, []
        for s in range(P):
            if s == human:
                labels.append("you")
                continue
            src = ns.partner if (ns.partner and human is not None and P == 4 and s == (human + 2) % 4) else ns.opponents
            seats[s] = load_policy(src, ns.game, options=options, seed=seed + s)
            labels.append(policy_label(src))
        out(f"{ns.game}, seed {seed}: you are player_{human} (team {G.team_of[human]})" if human is not None
            else f"{ns.game}, seed {seed}: watching")
        out(HELP)
        play_session(ns.game, seats, human, seed, options, ns.games, ns.log, labels, input_fn, out)
    except ValueError as e:
        print(f"tarot-play: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
