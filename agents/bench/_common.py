"""What the ``tarot-bench`` subcommands share: the repository's root, the peers of ``../shared/bench``,
the help formatter, the machine's description. Imports nothing heavy (``tarot-bench --help`` stays fast)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (agents/bench/_common.py -> the root)


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written, and every option's default after its help (unless the help names it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_ = action.help or ""
        if "default" in help_:
            return help_
        return super()._get_help_string(action)


def installed_version() -> str:
    """The package's version for ``--version`` (``importlib.metadata``: ``tarot_env.commands.version`` would
    import tarot_env, hence numpy, before the arguments are read)."""
    from importlib import metadata

    try:
        return metadata.version("tarocchini-rl")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def csv_list(text: str) -> list[str]:
    """``"a,b,,c"`` -> ``["a", "b", "c"]``."""
    return [x for x in text.split(",") if x]


def int_list(text: str) -> list[int]:
    """``"256,1024"`` -> ``[256, 1024]`` (an ``argparse`` type: a clear error for anything else)."""
    try:
        out = [int(x) for x in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}")
    return out


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {v}")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {v}")
    return v


def games_arg(text: str, available: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--games``: ``all`` (every one of ``available``) or comma-separated names among them."""
    if text == "all":
        return list(available)
    games = csv_list(text)
    bad = [g for g in games if g not in available]
    if bad or not games:
        parser.error(f"--games: unknown game(s) {', '.join(bad) or repr(text)}; choose from {', '.join(available)}")
    return games


def machine() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        out["affinity"] = sorted(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        out["loadavg"] = os.getloadavg()
    return out


def shared_dir() -> Path:
    """The development machine's harness beside the repository: ``$TAROCCHINI_SHARED``, else ``../shared``."""
    return Path(os.environ.get("TAROCCHINI_SHARED", ROOT.parent / "shared"))


def peers_python() -> str | None:
    """The peers' interpreter: ``$TAROCCHINI_PEERS_PYTHON`` (default ``~/.cache/tarocchini-peers/bin/python``)
    if it exists, else the one ``../shared/bench/setup.sh`` makes (or finds); ``None`` if neither works."""
    py = os.environ.get("TAROCCHINI_PEERS_PYTHON",
                        str(Path.home() / ".cache" / "tarocchini-peers" / "bin" / "python"))
    if Path(py).exists():
        return py
    setup = shared_dir() / "bench" / "setup.sh"
    try:
        return subprocess.run(["bash", str(setup)], capture_output=True, text=True,
                              check=True).stdout.strip().splitlines()[-1]
    except (subprocess.CalledProcessError, IndexError, FileNotFoundError) as e:
        print(f"no peers python ({e}); skipping peers", file=sys.stderr)
        return None


def run_peers(only: str, scale: float, reps: int, pin: bool = False) -> dict:
    """One run of ``../shared/bench/peers.py --only ONLY --scale SCALE --reps REPS``: its JSON (``rows``:
    ``key``, ``decisions_per_s``, ...), or ``{}`` where the peers are not there. Its log goes to stderr."""
    peers = shared_dir() / "bench" / "peers.py"
    if not peers.exists():
        print(f"peers.py not found under {shared_dir()}/bench (set TAROCCHINI_SHARED); skipping peers",
              file=sys.stderr)
        return {}
    py = peers_python()
    if py is None:
        return {}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "peers.json"
        cmd = [py, str(peers), "--scale", str(scale), "--reps", str(reps), "--json", str(out)]
        if only:
            cmd += ["--only", only]
        pre = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if pin else None
        try:  # its log to our stderr as it comes; through Python where stderr is no file (a test's capture)
            sys.stderr.fileno()
            log = sys.stderr
        except (AttributeError, OSError, ValueError):
            log = subprocess.PIPE
        p = subprocess.run(cmd, check=True, stdout=log, text=True, preexec_fn=pre)
        if p.stdout:
            sys.stderr.write(p.stdout)
        return json.loads(out.read_text())


def peer_medians(data: dict) -> dict[str, float]:
    """key -> decisions/s (peers.py's median over its repeats), from peers.py's JSON ``rows``."""
    return {r["key"]: r["decisions_per_s"] for r in data.get("rows", []) if "decisions_per_s" in r}
