"""The command lines' parsers: ``tarot-train``, ``tarot-eval``, ``tarot-arena``, ``tarot-play``, ``tarot-iterate``.

Built from the standard library, ``tarot_env``'s table of the games and the names of the players only (no
torch, numpy or engine is imported), so that ``--help``, ``--version`` and every argument error answer at
once. The console scripts (``agents/cli.py``) and the modules' own ``main(argv)`` (``python -m agents.training.ppo``
…) parse with them.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from tarot_env.commands import HelpFormatter, add_version, at_least
from tarot_env.games import GAMES

from .names import MIN_DEALS
from .players.players import player_specs, players_help

GAME_NAMES = sorted(GAMES)


def _parser(prog: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog, formatter_class=HelpFormatter)
    add_version(p)
    return p


# --- tarot-train ------------------------------------------------------------------------------------
def train_parser() -> argparse.ArgumentParser:
    p = _parser("tarot-train", "Masked PPO self-play training for the tarot games.",
                "Every Args field of agents/training/ppo.py can be overridden as key=value (values parsed as "
                "YAML), e.g. seed=3 total_decisions=200000 'hidden=[128,128]'. Several processes: torchrun "
                "--standalone --nproc_per_node=2 -m agents.training.ppo --config ... (see agents/training/ppo.py).")
    p.add_argument("--config", default=None, help="YAML config (configs/partita.yaml, configs/smoke.yaml, …); "
                   "default: none, every key at its default")
    p.add_argument("--resume", nargs="?", const="", default=None, metavar="PATH",
                   help="continue a run exactly where it stopped: from PATH (a checkpoint, or a folder holding "
                        "last.pt), or without PATH from <save_dir>/<run_name>/last.pt; it writes to the folders "
                        "that this command line names (default: not resuming)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config keys to change")
    return p


def parse_train(argv: list[str] | None = None) -> argparse.Namespace:
    """The parsed command line; ``--resume key=value`` is taken as ``--resume`` and an override (an override
    may follow ``--resume``)."""
    ns = train_parser().parse_intermixed_args(argv)  # overrides may come before or after --config / --resume
    if ns.resume and "=" in ns.resume and not Path(ns.resume).exists():
        ns.overrides.append(ns.resume)
        ns.resume = ""
    return ns


# --- tarot-eval -------------------------------------------------------------------------------------
def eval_parser(prog: str = "tarot-eval") -> argparse.ArgumentParser:
    players = players_help()
    p = _parser(prog, "Duplicate-deal evaluation of a player against another (default: random play).")
    p.add_argument("player", help=f"the player to evaluate: {players}")
    p.add_argument("--game", default=None, choices=GAME_NAMES,
                   help="the game (default: the checkpoint's game; partita when both players are names)")
    p.add_argument("--against", default="random", help=f"the opponent: {players}")
    p.add_argument("--deals", type=at_least(MIN_DEALS), default=1000,
                   help=f"duplicate deals, each played twice (at least {MIN_DEALS})")
    p.add_argument("--seed", type=int, default=12345, help="the deals and the players' seeds")
    p.add_argument("--sample", action="store_true", help="sample actions instead of the greedy choice")
    return p


# --- tarot-arena ------------------------------------------------------------------------------------
def arena_parser() -> argparse.ArgumentParser:
    specs = player_specs()
    players = "\n".join(f"  {spec:<14} {what}" for spec, what in specs)
    p = _parser("tarot-arena", "The arena: any set of policies (baselines, checkpoints, SB3 models, objects) "
                "play duplicate deals, pairwise.", f"players:\n{players}")
    p.add_argument("policies", nargs="+", metavar="PLAYER",
                   help="two or more players: " + ", ".join(spec for spec, _ in specs))
    p.add_argument("--game", required=True, choices=GAME_NAMES, help="the game")
    p.add_argument("--deals", type=at_least(MIN_DEALS), default=200,
                   help=f"duplicate deals per pair, each played twice (at least {MIN_DEALS})")
    p.add_argument("--seed", type=int, default=0, help="the deals and the policies' seeds (same seed, same result)")
    p.add_argument("--workers", type=at_least(1), default=1, help="processes (the result does not depend on it)")
    p.add_argument("--chunk", type=at_least(1), default=25, help="deals per task")
    p.add_argument("--bootstrap", type=at_least(1), default=2000, help="bootstrap resamples for the CI")
    p.add_argument("--out", default=None, help="folder for arena.md/.csv/.json/.png and journal.jsonl "
                   "(default: arena/<game>)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="rules/env option of the game, e.g. -o partita_signals=bolognese3")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.add_argument("--resume", action="store_true",
                   help="go on with the interrupted run of this match in --out (its journal.jsonl): play only "
                        "the tasks not finished; the result is the uninterrupted run's")
    p.add_argument("--restart", action="store_true",
                   help="start anew even where --out holds another match's results or an unfinished journal "
                        "(they are replaced)")
    return p


# --- tarot-play -------------------------------------------------------------------------------------
def play_parser() -> argparse.ArgumentParser:
    p = _parser("tarot-play", "Human play in the terminal, watching AI games, game logs (JSON lines) and their "
                "step-by-step replay.",
                "At your prompt: a move's number or name; 'help' lists the commands, 'help <move>' (e.g. "
                "help a_monte, help done, help signal) explains a move or a phase; 'undo' takes back your last "
                "move and the others' moves after it.")
    p.add_argument("--game", default="partita", choices=GAME_NAMES, help="the game")
    p.add_argument("--seat", type=int, default=0, help="your seat (0..3; Millone 0..1); -1: watch (--watch)")
    p.add_argument("--watch", action="store_true",
                   help="the policies play every seat; the game is told card by card (--view S: as seat S saw it)")
    p.add_argument("--delay", type=float, default=0.0, help="with --watch: seconds to pause after each trick")
    p.add_argument("--auto-forced", action="store_true", help="play your move by itself when it is the only legal one")
    p.add_argument("--opponents", default=None,
                   help=f"policy of the other seats (default: heuristic; with --watch: ppo, the shipped policy): "
                        f"{players_help()}")
    p.add_argument("--partner", default=None,
                   help="policy of your partner's seat (4-player games); default: --opponents")
    p.add_argument("--seed", type=int, default=None, help="the deal seed (default: random)")
    p.add_argument("--games", type=at_least(1), default=1, help="games to play")
    p.add_argument("--log", default=None, help="save the game as JSON lines to this file")
    p.add_argument("--replay", default=None, help="replay a saved log instead of playing")
    p.add_argument("--step", action="store_true", help="with --replay: wait for Enter after each action")
    p.add_argument("--view", type=int, default=None, help="with --replay or --watch: show only what this seat saw")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="rules option, e.g. -o deals_per_game=1 or -o target_score=300")
    return p


# --- tarot-iterate ----------------------------------------------------------------------------------
def iterate_parser(prog: str = "tarot-iterate") -> argparse.ArgumentParser:
    p = _parser(prog, "Expert iteration: the network learns from the search it guides, a promotion match "
                "per step (agents/training/iterate.py, docs/iterate.md).",
                "Every IterArgs field of agents/training/iterate.py can be overridden as key=value (values parsed "
                "as YAML), e.g. iterations=5 deals=64 'opponents=[self, random]'. Run again with the same settings, "
                "it goes on where it stopped. Several processes: torchrun --standalone --nproc_per_node=2 "
                "-m agents.training.iterate --config ...")
    p.add_argument("--config", default=None, help="YAML config (configs/iterate-millone.yaml); default: none, "
                   "every key at its default")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config keys to change")
    return p
