"""The console scripts ``tarot-train``, ``tarot-eval``, ``tarot-arena``, ``tarot-play`` and ``tarot-iterate``:
arguments first.

Each parses its command line (``agents/parsers.py``: no torch, no engine imported), so ``--help``,
``--version`` and every argument error answer at once; then it says when the rules are about to be
compiled (a cold cache, first run), imports the module that does the work and runs it under
:func:`tarot_env.commands.run_command` (Ctrl-C: one line and exit status 130, no traceback).
"""
from __future__ import annotations

from tarot_env.commands import note_cold_cache, run_command

from .parsers import arena_parser, eval_parser, iterate_parser, parse_train, play_parser


def train(argv: list[str] | None = None) -> int:
    """The ``tarot-train`` console script."""
    ns = parse_train(argv)

    def body() -> int:
        note_cold_cache()
        from .training.ppo import run_cli

        return run_cli(ns)

    return run_command("tarot-train", body)


def evaluate(argv: list[str] | None = None) -> int:
    """The ``tarot-eval`` console script."""
    ns = eval_parser().parse_args(argv)

    def body() -> int:
        note_cold_cache()
        from .evaluation.evaluate import run_cli

        return run_cli(ns, "tarot-eval")

    return run_command("tarot-eval", body)


def arena(argv: list[str] | None = None) -> int:
    """The ``tarot-arena`` console script."""
    ns = arena_parser().parse_args(argv)

    def body() -> int:
        note_cold_cache()
        from .evaluation.arena import run_cli

        return run_cli(ns, argv)

    return run_command("tarot-arena", body)


def play(argv: list[str] | None = None) -> int:
    """The ``tarot-play`` console script."""
    ns = play_parser().parse_args(argv)

    def body() -> int:
        note_cold_cache()
        from .play.human import run_cli

        return run_cli(ns)

    return run_command("tarot-play", body)


def iterate(argv: list[str] | None = None) -> int:
    """The ``tarot-iterate`` console script."""
    ns = iterate_parser().parse_intermixed_args(argv)

    def body() -> int:
        note_cold_cache()
        from .training.iterate import run_cli

        return run_cli(ns)

    return run_command("tarot-iterate", body)
