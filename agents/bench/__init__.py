"""``tarot-bench``: the speed (and training-strength) benchmarks, one subcommand each. Not tests.

    tarot-bench env         # AEC-loop decisions/s, ratios to PettingZoo / OpenSpiel / RLCard peers
    tarot-bench batched     # batched-engine decisions/s, ratios to OpenSpiel tarok and hearts
    tarot-bench train       # PPO training decisions/s (1-2 ranks, CUDA); --strength: trained and evaluated
    tarot-bench search worlds|decisions|strength   # the PIMC search player
    tarot-bench ab REV      # one batched engine, this tree against a git revision, paired processes
    tarot-bench first-run   # a fresh process's seconds to a first step, cold and warm numba cache
    tarot-bench compile     # each game's cold compile (CPU s) and the kernels compiled more than once

``tarot-bench <subcommand> --help`` lists its options with their defaults; the figures these produced
are in docs/benchmarks.md, docs/search.md, docs/training-distributed.md and docs/strength.md. The peers
(``env``, ``batched``) are measured in the same run by ``../shared/bench/peers.py`` when it is there.
This module and the subcommands' modules import only the standard library: each subcommand imports
numpy, the engines or torch when it runs, so ``--help`` answers at once.
"""
from __future__ import annotations

import argparse
import sys

from . import ab, batched, compile, env, first_run, search, train
from ._common import HelpFormatter, installed_version

SUBCOMMANDS = {"env": env, "batched": batched, "train": train, "search": search, "ab": ab, "first-run": first_run,
               "compile": compile}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tarot-bench", description=__doc__, formatter_class=HelpFormatter)
    ap.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = ap.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    for name, mod in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.__doc__, formatter_class=HelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_module=mod, _parser=p)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run ``tarot-bench`` with ``argv`` (default ``sys.argv[1:]``); returns 0 (errors exit through argparse
    with status 2, or with a message)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    ns = build_parser().parse_args(argv)
    mod, parser = ns._module, ns._parser
    from tarot_env.commands import run_command  # after parsing: tarot_env imports numpy

    def body() -> int:
        if mod is train:
            mod.run(ns, parser, argv[1:])
        else:
            mod.run(ns, parser)
        return 0

    return run_command("tarot-bench", body)


if __name__ == "__main__":
    raise SystemExit(main())
