#!/usr/bin/env python
"""Training throughput of the PPO trainer (issue #14): decisions/s with the updates included, for 1 and
2 ranks on the CPU and, when torch sees a GPU, on CUDA. Not a test.

    python scripts/bench_train.py                          # Partita's default config, 8 updates after 2 of warm-up
    python scripts/bench_train.py --updates 3 --warmup 1   # a quick check that it works
    python scripts/bench_train.py --rounds 3               # 3 interleaved rounds: medians and paired ratios

Each row is a fresh training run of ``--config`` (default ``configs/partita.yaml``: 256 games x 64
decisions = 16,384 decisions per update) started the way a user starts it: ``python -m agents.ppo``
for one rank, ``python -m torch.distributed.run --standalone --nproc_per_node=N -m agents.ppo`` for N.
Evaluation and intermediate checkpoints are switched off; everything else (rollouts on the batched
engine, GAE, the clipped updates, the opponent pool and its snapshots, logging, the ranks' gradient
averaging) is timed. decisions/s = the decisions of the measured updates / the wall time of those
updates (``charts/decisions_per_s`` of rank 0's ``progress.csv``; the first ``--warmup`` updates are
left out). The last column, rank 0's decisions per second of its own CPU time (its share of the
rollout), shows how much work a rank does per decision whatever else runs on the machine: with N ranks
near the 1-rank figure, N free cores give close to N times the throughput. Prints a markdown table
and the command that produced it. Run it on a quiet machine: other processes on the same cores lower
every decisions/s row.
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def run_row(config: str, ranks: int, threads: int, device: str, amp: bool, updates: int, warmup: int,
            extra: list[str], tmp: Path) -> dict:
    """One training run; returns decisions/s over the measured updates (and what was run)."""
    from agents.ppo import load_config

    base = load_config(config, extra)
    rollout = base.num_envs * base.num_steps
    name = f"r{ranks}t{threads}{device.replace(':', '')}{'amp' if amp else ''}"
    overrides = [f"total_decisions={(updates + warmup) * rollout}", "time_limit_s=0", "eval_every=0",
                 "checkpoint_every=0", "progress=false", f"log_dir={tmp}/runs", f"save_dir={tmp}/ck",
                 f"run_name={name}", "overwrite=true", f"threads={threads}", f"device={device}",
                 f"amp={'true' if amp else 'false'}", *extra]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}"]
                if ranks > 1 else [sys.executable])
    cmd = [*launcher, "-m", "agents.ppo", "--config", config, *overrides]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"bench_train: the run {name} failed:\n{p.stderr[-2000:]}")
    with open(tmp / "runs" / name / "progress.csv") as f:
        rows = list(csv.DictReader(f))[warmup:]
    seconds = sum(rollout / float(r["charts/decisions_per_s"]) for r in rows)
    cpu_seconds = sum(rollout / ranks / float(r["charts/decisions_per_cpu_s"]) for r in rows)  # rank 0's
    return {"ranks": ranks, "threads": threads, "device": device, "amp": amp,
            "decisions_per_s": len(rows) * rollout / seconds, "updates": len(rows), "wall_s": wall,
            "decisions_per_cpu_s": len(rows) * rollout / ranks / cpu_seconds}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/partita.yaml")
    p.add_argument("--updates", type=int, default=8, help="measured updates per row")
    p.add_argument("--warmup", type=int, default=2, help="updates run first and left out of the figure")
    p.add_argument("--rounds", type=int, default=1,
                   help="run the whole plan this many times, interleaved, and report each row's median (and "
                        "range) and the median of the per-round ratios: on a shared machine whose speed "
                        "drifts, paired rounds compare the rows better than one run each")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides for every row")
    ns = p.parse_args(argv)
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    plan = [(1, 1, "cpu", False)]
    if cores >= 2:
        plan += [(1, cores, "cpu", False), (2, max(1, cores // 2), "cpu", False)]
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus:
        plan += [(1, max(1, cores // 2), "cuda", False), (1, max(1, cores // 2), "cuda", True)]
        if gpus > 1:
            plan += [(gpus, max(1, cores // gpus), "cuda", True)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rounds: list[list[dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(max(1, ns.rounds)):
            rounds.append([])
            for ranks, threads, device, amp in plan:
                r = run_row(ns.config, ranks, threads, device, amp, ns.updates, ns.warmup, ns.overrides, Path(tmp))
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
    cmd = " ".join(["python scripts/bench_train.py", *(sys.argv[1:] if argv is None else argv)])
    many = len(rounds) > 1
    print(f"\nTraining throughput, `{ns.config}` ({ns.updates} updates measured after {ns.warmup} of warm-up; "
          f"updates, pool and logging included; no evaluation); {platform.processor() or platform.machine()}, "
          f"{cores} cores, torch {torch.__version__}, load average {load:.2f} at the start"
          + (f"; {len(rounds)} interleaved rounds: medians, the range, the median of the paired ratios" if many
             else "") + ".\n")
    print("| ranks | threads per rank | device | decisions/s | × 1 rank, 1 thread | decisions per CPU-s of rank 0 |")
    print("|---|---|---|---|---|---|")
    for r in results:
        dev = r["device"] + (" (bf16 amp)" if r["amp"] else "")
        spread = f" ({r['range'][0]:,.0f}–{r['range'][1]:,.0f})" if many else ""
        print(f"| {r['ranks']} | {r['threads']} | {dev} | {r['decisions_per_s']:,.0f}{spread} | "
              f"{r['ratio']:.2f}× | {r['decisions_per_cpu_s']:,.0f} |")
    if not gpus:
        print("| 1 | – | cuda | not measured (no CUDA device) | – | – |")
    print(f"\nCommand: `{cmd}`")


if __name__ == "__main__":
    main()
