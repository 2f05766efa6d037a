#!/usr/bin/env python3
"""Learning curves of training runs from their ``progress.csv``: the share of games won against the
opponent pool (the heuristic and the snapshots) and the periodic evaluation against random play.

    python scripts/plot_runs.py runs/ottocento_ft2 runs/ottocento_ft4 runs/millone_ft3 runs/millone_ft4 \
        runs/millone_ft5 --out docs/finetune_curves.png
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run log directories (each with a progress.csv)")
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--window", type=int, default=25, help="updates averaged for the pool win rate")
    ns = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for n, run in enumerate(ns.runs):
        with open(Path(run) / "progress.csv") as f:
            rows = list(csv.DictReader(f))
        name = Path(run).name
        pool = [(float(r["step"]) / 1e6, float(r["pool/win_rate_vs_pool"])) for r in rows if r["pool/win_rate_vs_pool"]]
        if pool:
            x, y = map(np.array, zip(*pool))
            k = min(ns.window, len(y))
            axes[0].plot(x[k - 1:], 100 * np.convolve(y, np.ones(k) / k, mode="valid"), label=name, color=f"C{n}")
        ev = [r for r in rows if r["eval/margin_vs_random"]]
        axes[1].errorbar([float(r["step"]) / 1e6 for r in ev], [float(r["eval/margin_vs_random"]) for r in ev],
                         yerr=[float(r["eval/margin_ci95"]) for r in ev], capsize=2, label=name, color=f"C{n}")
    axes[0].set(title=f"games won against the opponent pool (%, mean of {ns.window} updates)",
                xlabel="million decisions")
    axes[1].set(title="margin per deal vs random play (periodic evaluation, 95% CI)", xlabel="million decisions")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(ns.out, dpi=90)
    print(f"wrote {ns.out}")


if __name__ == "__main__":
    main()
