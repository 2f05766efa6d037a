"""Cold compile cost: each game's kernels compiled from nothing, and the kernels compiled more than once.

For every game it starts a fresh process with an empty ``NUMBA_CACHE_DIR`` that runs the game's warm-up
(``python -m agents.players.warm GAME``: every kernel the engines, the sampler, the search and the heuristic
use), and reports the process's CPU seconds and each kernel that numba compiled for more than one argument
signature, with the arguments that differ. A kernel called once with a literal constant (``f(x, 0)`` inside
another kernel) and once with a variable, or once with a read-only array and once with a writable one, is
compiled twice: that is the usual cause, and passing ``np.int64(0)`` or a writable array is the usual fix.

    tarot-bench compile                         # every game, one after the other
    taskset -c 0 tarot-bench compile --games millone --json compile.json

Not a test: the seconds depend on the machine and its load. A whole-suite ``pytest`` pays this once per
change of ``tarot_env`` (docs/testing.md). ``--json`` writes, per game, ``cpu_s`` and ``repeated``
(kernel name -> its signatures).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from ._common import ROOT, games_arg

HELP = "CPU seconds of each game's cold compile, and the kernels numba compiled more than once"

# run in the child: the game's warm-up, then the kernels of the loaded modules with several signatures
_CHILD = r"""
import json, resource, sys
from agents.players import warm
from agents.bench.compile import repeated_kernels
warm.main([sys.argv[1]])
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": ru.ru_utime + ru.ru_stime, "repeated": repeated_kernels()}))
"""


def repeated_kernels(prefixes: tuple[str, ...] = ("tarot_env", "agents")) -> dict[str, list[list[str]]]:
    """Every compiled kernel (numba dispatcher) of the loaded modules named ``prefixes...`` that has more than one
    signature in this process: ``"module.name"`` -> its signatures, each a list of argument types."""
    from numba.core.registry import CPUDispatcher

    out = {}
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith(prefixes):
            continue
        for attr, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and f.__module__ == name and len(f.signatures) > 1:
                out[f"{name}.{attr}"] = [[str(t) for t in sig] for sig in f.signatures]
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--games", default="all", help="comma-separated games, or all")
    p.add_argument("--json", default=None, help="write the results here")


def differing(signatures: list[list[str]]) -> list[str]:
    """The arguments (``"arg i: a | b"``) on which a kernel's signatures differ."""
    return [f"arg {i}: " + " | ".join(dict.fromkeys(types)) for i, types in enumerate(zip(*signatures))
            if len(set(types)) > 1]


def measure(game: str) -> dict:
    """One fresh process compiling ``game``'s warm-up into an empty numba cache (its CPU seconds, and the
    kernels it compiled more than once)."""
    with tempfile.TemporaryDirectory(prefix="tarot-compile-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, OMP_NUM_THREADS="1")
        out = subprocess.run([sys.executable, "-c", _CHILD, game], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    import tarot_env

    results = {}
    for game in games_arg(ns.games, list(tarot_env.GAMES), parser):
        r = results[game] = measure(game)
        print(f"{game:10s} cold compile {r['cpu_s']:7.1f} CPU s; {len(r['repeated'])} kernels compiled more than once")
        for name, sigs in r["repeated"].items():
            print(f"    {name} x{len(sigs)}: " + "; ".join(differing(sigs)))
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(results, f, indent=1)
