"""The package's commands, what every command line shares, and ``python -m tarot_env`` / ``python -m agents``.

This module imports only the standard library (importing it imports the ``tarot_env`` package: pettingzoo,
no numba kernel, no torch), so that a command's ``--help``, ``--version`` and argument errors answer at
once: a command line parses its arguments with the pieces here first, and only then imports the engines or
torch (docs/cli.md has the measured times).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

DIST = "tarocchini-rl"

# console script -> what it does (one line). The scripts themselves are declared in pyproject.toml.
COMMANDS: dict[str, str] = {
    "tarot-demo": "play one seeded random game and show the table",
    "tarot-train": "train a policy with masked PPO self-play (configs/*.yaml, --resume)",
    "tarot-eval": "duplicate-deal evaluation of one player against another",
    "tarot-arena": "any set of players on duplicate deals, pairwise, with ratings",
    "tarot-play": "play against policies in the terminal, watch them play, replay a game log",
    "tarot-iterate": "expert iteration: the network learns from the search it guides (configs/iterate-*.yaml)",
    "tarot-bench": "the speed and strength benchmarks",
    "tarot-web": "play or watch any of the games in the browser (a local web app; the web extra)",
}

INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it
COMPILING = "compiling the rules (first run only, about 30 s)"


def version() -> str:
    """The installed package's version (``importlib.metadata``; no import of the package itself)."""
    from importlib import metadata

    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description and epilog as written, and every option's default after its help (unless the
    help already says what the default is)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_ = action.help or ""
        if "default" in help_ or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return help_
        return help_ + " (default: %(default)s)"


def add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")


def at_least(low: int) -> Callable[[str], int]:
    """An ``argparse`` type: an integer of at least ``low`` (else a one-line usage error)."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"must be at least {low} (got {n})")
        return n

    parse.__name__ = f"integer >= {low}"
    return parse


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """``body()``'s exit status (None: 0); Ctrl-C ends it with ``<prog>: interrupted`` and 130, no traceback."""
    try:
        return body() or 0
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr, flush=True)
        return INTERRUPTED


def cache_is_cold() -> bool:
    """Whether no compiled rules kernel is cached yet (``tarot_env/_numba_cache.py``): the next use of the
    rules compiles them."""
    from ._numba_cache import cache_dir

    where = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir())
    return not (where.is_dir() and any(where.rglob("*.nbi")))


def note_cold_cache(out: Callable[[str], None] | None = None) -> bool:
    """Say, in one line on stderr, that the rules are about to be compiled when the cache is cold and someone
    is watching (stderr is a terminal: a command's piped or logged output stays what it was). Returns whether
    it said so."""
    if not (sys.stderr.isatty() and cache_is_cold()):
        return False
    (out or (lambda s: print(s, file=sys.stderr, flush=True)))(COMPILING)
    return True


def listing() -> str:
    """The commands, one a line, for ``python -m tarot_env`` and ``python -m agents``."""
    width = max(map(len, COMMANDS))
    lines = [f"{DIST} {version()}: the commands (each has --help and --version)", ""]
    lines += [f"  {name:<{width}}  {what}" for name, what in COMMANDS.items()]
    lines += ["", "The same as modules: python -m agents.training.ppo (tarot-train), "
              "python -m agents.evaluation.evaluate (tarot-eval), python -m agents.evaluation.arena, "
              "python -m agents.play.human (tarot-play), python -m agents.training.iterate (tarot-iterate), "
              "python -m tarot_env.demo."]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m tarot_env") -> int:
    """Print :func:`listing` (``--help`` and ``--version`` too)."""
    parser = argparse.ArgumentParser(prog=prog, description=listing(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(parser)
    parser.parse_args(argv)
    print(listing())
    return 0
