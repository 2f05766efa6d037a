#!/usr/bin/env python
"""Strength and throughput benchmark of the default PPO configs (issue #6, point 7). Not a test.

    python scripts/benchmark_ppo.py                      # train every game's default config, then report
    python scripts/benchmark_ppo.py --skip-train         # only evaluate the runs already in runs/ checkpoints/
    python scripts/benchmark_ppo.py --games partita --deals 1000

For each game: train ``configs/<game>.yaml`` (29 minutes of training on one core by default), evaluate
``checkpoints/<game>_s1/final.pt`` on ``--deals`` duplicate deals against random play (greedy policy),
and write ``docs/ppo_benchmark.md`` (the table) and ``docs/ppo_learning_curves.png`` (from each run's
``progress.csv``).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tarot_env  # noqa: E402
from agents.evaluate import duplicate_eval  # noqa: E402
from agents.policy import load_network_policy  # noqa: E402
from agents.ppo import load_config, run_paths, train  # noqa: E402
from agents.rollout import make_spec  # noqa: E402


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
            key = (r["eval/win_share_vs_random"], r["eval/margin_vs_random"], r["eval/margin_ci95"])
            if r["eval/win_share_vs_random"] and key != seen:
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=list(tarot_env.GAMES))
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--deals", type=int, default=1000)
    p.add_argument("--plot-only", action="store_true", help="only redraw the learning curves")
    p.add_argument("--out", default=str(ROOT / "docs"))
    p.add_argument("overrides", nargs="*", metavar="key=value", help="applied to every game's config")
    ns = p.parse_args()
    rows, runs = [], {}
    if ns.plot_only:
        for game in ns.games:
            runs[game] = run_paths(load_config(ROOT / "configs" / f"{game}.yaml", ns.overrides))[0]
        plot(runs, Path(ns.out) / "ppo_learning_curves.png")
        return
    for game in ns.games:
        args = load_config(ROOT / "configs" / f"{game}.yaml", ns.overrides)
        if not ns.skip_train:
            train(args)
        log_dir, ck_dir = run_paths(args)
        summary = json.loads((log_dir / "summary.json").read_text())
        pol = load_network_policy(ck_dir / "final.pt", game)
        spec = make_spec(game, args.game_options)
        r = duplicate_eval(spec, pol, None, ns.deals, seed=2024)
        runs[game] = log_dir
        rows.append((game, summary, r))
        print(game, r, flush=True)
    lines = ["| game | training (min) | decisions | decisions/s (wall) | decisions/CPU-s | backend "
             "| duplicate deals won vs random | margin/deal (95% CI) |",
             "|---|---|---|---|---|---|---|---|"]
    for game, s, r in rows:
        lines.append(f"| {game} | {s['train_time_s'] / 60:.1f} | {s['step']:,} | {s['decisions_per_s_overall']:,.0f} "
                     f"| {s['decisions_per_cpu_s']:,.0f} | {s.get('backend', '')} | {100 * r.win_share:.1f}% "
                     f"(ties {100 * r.tie_share:.1f}%) | {r.mean_margin:+.1f} ± {r.ci95:.1f} |")
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ppo_benchmark.md").write_text("\n".join(lines) + "\n")
    plot(runs, out / "ppo_learning_curves.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
