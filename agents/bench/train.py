"""Training benchmarks of the PPO trainer: throughput (default) and, with ``--strength``, the default
configs trained and evaluated (issues #14 and #6). Not tests.

**Throughput** (issue #14): decisions/s with the updates included, for 1 and 2 ranks on the CPU and,
when torch sees a GPU, on CUDA.

    tarot-bench train                          # Partita's default config, 8 updates after 2 of warm-up
    tarot-bench train --updates 3 --warmup 1   # a quick check that it works
    tarot-bench train --rounds 3               # 3 interleaved rounds: medians and paired ratios
    tarot-bench train --rows 1x1,2x1 num_envs=512   # chosen rows; key=value overrides for every row

Each row is a fresh training run of ``--config`` (default ``configs/partita.yaml``: 256 games x 64
decisions = 16,384 decisions per update) started the way a user starts it: ``python -m agents.training.ppo``
for one rank, ``python -m torch.distributed.run --standalone --nproc_per_node=N -m agents.training.ppo`` for N.
Evaluation and intermediate checkpoints are switched off; everything else (rollouts on the batched
engine, GAE, the clipped updates, the opponent pool and its snapshots, logging, the ranks' gradient
averaging) is timed. decisions/s = the decisions of the measured updates / the wall time of those
updates (``charts/decisions_per_s`` of rank 0's ``progress.csv``; the first ``--warmup`` updates are
left out). ``× first row``: the ratio to the first row (1 rank x 1 thread by default) of the same round.
The last column, rank 0's decisions per second of its own CPU time (its share of the rollout), shows how
much work a rank does per decision whatever else runs on the machine: with N ranks near the 1-rank
figure, N free cores give close to N times the throughput. Prints a markdown table and the command that
produced it (``--json``: the rows). Run it on a quiet machine: other processes on the same cores lower
every decisions/s row.

**Strength** (``--strength``, issue #6 point 7): for each game of ``--games``, train ``configs/<game>.yaml``
(29 minutes of training on one core by default; ``--skip-train``: the runs already in runs/ checkpoints/),
evaluate ``checkpoints/<game>_s1/final.pt`` on ``--deals`` duplicate deals against random play (greedy
policy), and write ``ppo_benchmark.md`` (the table: training minutes, decisions, decisions/s wall and per
CPU second, backend, deals won and margin vs random) and ``ppo_learning_curves.png`` (from each run's
``progress.csv``) into ``--out`` (default the repository's ``docs/``).

    tarot-bench train --strength                      # train every game's default config, then report
    tarot-bench train --strength --skip-train         # only evaluate the runs already in runs/ checkpoints/
    tarot-bench train --strength --games partita --deals 1000
    tarot-bench train --strength --plot-only          # only redraw the learning curves
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import ROOT, csv_list, machine, positive_int

HELP = "PPO training decisions/s for 1-2 ranks (CPU, CUDA); --strength: default configs trained and evaluated"
ROW = re.compile(r"^(\d+)x(\d+)(?:@(cpu|cuda))?(\+amp)?$")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    t = ap.add_argument_group("throughput (the default)")
    t.add_argument("--config", default="configs/partita.yaml", help="the training config of every row")
    t.add_argument("--updates", type=positive_int, default=8, help="measured updates per row")
    t.add_argument("--warmup", type=int, default=2, help="updates run first and left out of the figure")
    t.add_argument("--rounds", type=positive_int, default=1,
                   help="run the whole plan this many times, interleaved, and report each row's median (and "
                        "range) and the median of the per-round ratios: on a shared machine whose speed "
                        "drifts, paired rounds compare the rows better than one run each")
    t.add_argument("--rows", default="auto",
                   help="the rows: auto (1 rank x 1 thread; with 2+ cores 1 x all cores and 2 x cores/2; with "
                        "CUDA 1 x cores/2 on cuda with and without bf16 amp, and every GPU) or comma-separated "
                        "RANKSxTHREADS[@cpu|@cuda][+amp], e.g. 1x1,2x1")
    t.add_argument("--json", default=None, help="also write the rows to this file")
    s = ap.add_argument_group("strength (--strength)")
    s.add_argument("--strength", action="store_true",
                   help="train and evaluate each game's default config instead (see above)")
    s.add_argument("--games", nargs="+", default=None,
                   help="games (separated by spaces or commas; default: every game)")
    s.add_argument("--skip-train", action="store_true", help="only evaluate the runs already there")
    s.add_argument("--deals", type=positive_int, default=None,
                   help="duplicate deals of the evaluation against random (default: 1000)")
    s.add_argument("--plot-only", action="store_true", help="only redraw the learning curves")
    s.add_argument("--out", default=None, help="folder of the table and the curves (default: the repository's docs/)")
    ap.add_argument("overrides", nargs="*", default=[], metavar="key=value",
                    help="config overrides for every row (every game with --strength)")


# --- throughput ---------------------------------------------------------------------------------------

def config_path(config: str) -> str:
    """``config`` as given if it exists from here, else relative to the repository (the runs start there)."""
    p = Path(config)
    return str(p.resolve()) if p.exists() else str(ROOT / p)


def run_row(config: str, ranks: int, threads: int, device: str, amp: bool, updates: int, warmup: int,
            extra: list[str], tmp: Path) -> dict:
    """One training run; returns decisions/s over the measured updates (and what was run)."""
    from agents.training.ppo import load_config

    base = load_config(config, extra)
    rollout = base.num_envs * base.num_steps
    name = f"r{ranks}t{threads}{device.replace(':', '')}{'amp' if amp else ''}"
    overrides = [f"total_decisions={(updates + warmup) * rollout}", "time_limit_s=0", "eval_every=0",
                 "checkpoint_every=0", "progress=false", f"log_dir={tmp}/runs", f"save_dir={tmp}/ck",
                 f"run_name={name}", "overwrite=true", f"threads={threads}", f"device={device}",
                 f"amp={'true' if amp else 'false'}", *extra]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
                if ranks > 1 else [sys.executable])
    cmd = [*launcher, "-m", "agents.training.ppo", "--config", config, *overrides]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"tarot-bench train: the run {name} failed:\n{p.stderr[-2000:]}")
    with open(tmp / "runs" / name / "progress.csv") as f:
        rows = list(csv.DictReader(f))[warmup:]
    if not rows:
        raise SystemExit(f"tarot-bench train: the run {name} logged no update after the {warmup} of warm-up")
    seconds = sum(rollout / float(r["charts/decisions_per_s"]) for r in rows)
    cpu_seconds = sum(rollout / ranks / float(r["charts/decisions_per_cpu_s"]) for r in rows)  # rank 0's
    return {"ranks": ranks, "threads": threads, "device": device, "amp": amp,
            "decisions_per_s": len(rows) * rollout / seconds, "updates": len(rows), "wall_s": wall,
            "decisions_per_cpu_s": len(rows) * rollout / ranks / cpu_seconds}


def plan_rows(rows: str, cores: int, gpus: int, ap: argparse.ArgumentParser) -> list[tuple[int, int, str, bool]]:
    if rows != "auto":
        out = []
        for item in csv_list(rows):
            m = ROW.match(item)
            if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
                ap.error(f"--rows: {item!r} is not RANKSxTHREADS[@cpu|@cuda][+amp] (e.g. 2x1, 1x4@cuda+amp)")
            out.append((int(m.group(1)), int(m.group(2)), m.group(3) or "cpu", bool(m.group(4))))
        if not out:
            ap.error("--rows: give at least one row, or auto")
        return out
    plan = [(1, 1, "cpu", False)]
    if cores >= 2:
        plan += [(1, cores, "cpu", False), (2, max(1, cores // 2), "cpu", False)]
    if gpus:
        plan += [(1, max(1, cores // 2), "cuda", False), (1, max(1, cores // 2), "cuda", True)]
        if gpus > 1:
            plan += [(gpus, max(1, cores // gpus), "cuda", True)]
    return plan


def throughput(ns: argparse.Namespace, ap: argparse.ArgumentParser, argv: list[str]) -> dict:
    if ns.warmup < 0:
        ap.error("--warmup must be >= 0")
    config = config_path(ns.config)
    if not Path(config).exists():
        ap.error(f"--config: no such file {ns.config}")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    plan = plan_rows(ns.rows, cores, 0, ap)  # the rows as given are checked before torch loads
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if ns.rows == "auto":
        plan = plan_rows(ns.rows, cores, gpus, ap)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rounds: list[list[dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(ns.rounds):
            rounds.append([])
            for ranks, threads, device, amp in plan:
                r = run_row(config, ranks, threads, device, amp, ns.updates, ns.warmup, ns.overrides, Path(tmp))
                rounds[-1].append(r)
                print(f"  round {k + 1}: {ranks} rank(s) x {threads} thread(s) {device}{' amp' if amp else ''}: "
                      f"{r['decisions_per_s']:,.0f} decisions/s", file=sys.stderr)
    results = []
    for i in range(len(plan)):  # each row: its median over the rounds, the range, the median paired ratio
        runs = [rd[i] for rd in rounds]
        r = dict(runs[0])
        for key in ("decisions_per_s", "decisions_per_cpu_s"):
            r[key] = statistics.median(x[key] for x in runs)
        r["range"] = (min(x["decisions_per_s"] for x in runs), max(x["decisions_per_s"] for x in runs))
        r["ratio"] = statistics.median(rd[i]["decisions_per_s"] / rd[0]["decisions_per_s"] for rd in rounds)
        results.append(r)
    cmd = " ".join(["tarot-bench train", *argv])
    many = len(rounds) > 1
    first = plan[0]
    print(f"\nTraining throughput, `{ns.config}` ({ns.updates} updates measured after {ns.warmup} of warm-up; "
          f"updates, pool and logging included; no evaluation); {platform.processor() or platform.machine()}, "
          f"{cores} cores, torch {torch.__version__}, load average {load:.2f} at the start"
          + (f"; {len(rounds)} interleaved rounds: medians, the range, the median of the paired ratios" if many
             else "") + ".\n")
    print(f"| ranks | threads per rank | device | decisions/s | × {first[0]} rank, {first[1]} thread | "
          "decisions per CPU-s of rank 0 |")
    print("|---|---|---|---|---|---|")
    for r in results:
        dev = r["device"] + (" (bf16 amp)" if r["amp"] else "")
        spread = f" ({r['range'][0]:,.0f}–{r['range'][1]:,.0f})" if many else ""
        print(f"| {r['ranks']} | {r['threads']} | {dev} | {r['decisions_per_s']:,.0f}{spread} | "
              f"{r['ratio']:.2f}× | {r['decisions_per_cpu_s']:,.0f} |")
    if not gpus and ns.rows == "auto":
        print("| 1 | – | cuda | not measured (no CUDA device) | – | – |")
    print(f"\nCommand: `{cmd}`")
    out = {"machine": machine(), "config": ns.config, "updates": ns.updates, "warmup": ns.warmup,
           "torch": torch.__version__, "command": cmd, "rows": results, "rounds": rounds}
    if ns.json:
        Path(ns.json).write_text(json.dumps(out, indent=1))
    return out


# --- strength -----------------------------------------------------------------------------------------

def read_csv(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def plot(runs: dict[str, Path], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    top, bottom = axes[0], axes[1]
    for n, (game, log_dir) in enumerate(runs.items()):
        rows = read_csv(log_dir / "progress.csv")
        ev, seen = [], None
        for r in rows:  # one point per evaluation (older logs repeat the last one on every row)
            key = (r.get("eval/win_share_vs_random"), r.get("eval/margin_vs_random"), r.get("eval/margin_ci95"))
            if r.get("eval/win_share_vs_random") and key != seen:
                ev.append(r)
            seen = key
        t = [float(r["seconds"]) / 60 for r in ev]
        top[0].plot(t, [100 * float(r["eval/win_share_vs_random"]) for r in ev], label=game)
        minutes = [float(r["seconds"]) / 60 for r in rows]
        for ax, key in ((top[1], "charts/decisions_per_s"), (top[2], "losses/entropy")):
            y = np.array([float(r[key]) for r in rows])
            k = min(20, len(y))
            ax.plot(minutes[k - 1:], np.convolve(y, np.ones(k) / k, mode="valid"), label=game)  # mean of 20
        if n < 3:
            ax = bottom[n]
            ax.errorbar(t, [float(r["eval/margin_vs_random"]) for r in ev],
                        yerr=[float(r["eval/margin_ci95"]) for r in ev], capsize=2, color=f"C{n}")
            ax.set(title=f"{game}: score margin per deal vs random (95% CI)", xlabel="minutes")
            ax.grid(alpha=0.3)
    top[0].axhline(90, color="grey", ls="--", lw=0.8)
    top[0].set(title="duplicate deals won vs random play (%)", xlabel="minutes", ylim=(50, 101))
    top[1].set(title="decisions/s, updates included (mean of 20 updates)", xlabel="minutes")
    top[2].set(title="policy entropy over legal actions (mean of 20 updates)", xlabel="minutes")
    for ax in top:
        ax.grid(alpha=0.3)
        ax.legend()
    for ax in bottom[len(runs):]:
        ax.axis("off")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def strength(ns: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    import tarot_env

    games = [g for item in (ns.games or list(tarot_env.GAMES)) for g in csv_list(item)]
    bad = [g for g in games if g not in tarot_env.GAMES]
    if bad or not games:
        ap.error(f"--games: unknown game(s) {', '.join(bad)}; choose from {', '.join(tarot_env.GAMES)}")
    from agents.evaluation.evaluate import duplicate_eval
    from agents.players.policy import load_network_policy
    from agents.spec import make_spec
    from agents.training.ppo import load_config, run_paths, train

    out = Path(ns.out) if ns.out else ROOT / "docs"
    deals = ns.deals or 1000
    if deals < 2:
        ap.error("--deals must be at least 2")
    rows, runs = [], {}
    if ns.plot_only:
        for game in games:
            runs[game] = run_paths(load_config(ROOT / "configs" / f"{game}.yaml", ns.overrides))[0]
        plot(runs, out / "ppo_learning_curves.png")
        return {"curves": str(out / "ppo_learning_curves.png")}
    result = {}
    for game in games:
        args = load_config(ROOT / "configs" / f"{game}.yaml", ns.overrides)
        if not ns.skip_train:
            train(args)
        log_dir, ck_dir = run_paths(args)
        summary = json.loads((log_dir / "summary.json").read_text())
        pol = load_network_policy(ck_dir / "final.pt", game)
        spec = make_spec(game, args.game_options)
        r = duplicate_eval(spec, pol, None, deals, seed=2024)
        runs[game] = log_dir
        rows.append((game, summary, r))
        result[game] = {"train_time_s": summary["train_time_s"], "decisions": summary["step"],
                        "decisions_per_s": summary["decisions_per_s_overall"],
                        "decisions_per_cpu_s": summary["decisions_per_cpu_s"], "backend": summary.get("backend", ""),
                        "vs_random": r.as_dict()}
        print(game, r, flush=True)
    lines = ["| game | training (min) | decisions | decisions/s (wall) | decisions/CPU-s | backend "
             "| duplicate deals won vs random | margin/deal (95% CI) |",
             "|---|---|---|---|---|---|---|---|"]
    for game, s, r in rows:
        lines.append(f"| {game} | {s['train_time_s'] / 60:.1f} | {s['step']:,} | {s['decisions_per_s_overall']:,.0f} "
                     f"| {s['decisions_per_cpu_s']:,.0f} | {s.get('backend', '')} | {100 * r.win_share:.1f}% "
                     f"(ties {100 * r.tie_share:.1f}%) | {r.mean_margin:+.1f} ± {r.ci95:.1f} |")
    out.mkdir(parents=True, exist_ok=True)
    (out / "ppo_benchmark.md").write_text("\n".join(lines) + "\n")
    plot(runs, out / "ppo_learning_curves.png")
    print("\n".join(lines))
    return result


def run(ns: argparse.Namespace, ap: argparse.ArgumentParser, argv: list[str] | None = None) -> dict:
    if ns.strength or ns.skip_train or ns.plot_only:
        return strength(ns, ap)
    given = [o for o, v in (("--games", ns.games), ("--deals", ns.deals), ("--out", ns.out)) if v is not None]
    if given:
        ap.error(f"{', '.join(given)}: only with --strength")
    return throughput(ns, ap, argv if argv is not None else sys.argv[2:])
