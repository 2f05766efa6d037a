#!/usr/bin/env python3
"""The learning curve of an expert-iteration run (``tarot-iterate``, issue #34): every network of the run
against a fixed reference set on the same duplicate deals, with the compute spent to reach it.

    python scripts/learning_curve.py runs/it --against random --against heuristic \
        --against "pimc:worlds=64,rollout=random" --deals 200 --seed 7 --png docs/iterate_curve.png

The networks are the run's ``net_<k>.pt`` (``net_0`` the start; ``net_<k+1>`` the candidate of step ``k``
if it was promoted, else ``net_<k>`` again). A network met again (not promoted: the same weights) is not
played again, and every result is kept in ``<run>/curve.json`` by the network's checksum, the opponent, the
deals and the seed, so that a later call with more steps or other opponents plays only what is new. Each
opponent is built afresh with ``--seed`` for every network (a search opponent draws the same worlds for
each), and ``agents.evaluation.evaluate.duplicate_eval`` plays the deals of ``--seed`` twice, seats exchanged.

The compute of step ``k`` is read from its ``match.json``: the labelling's CPU seconds (rank 0's, times the
number of processes), the fit's and the match's seconds (one process); ``core_hours`` at ``net_<k>`` is the
sum over the steps before it. Prints a Markdown table (docs/strength.md); ``--png`` draws the share of deals
won (95% Wilson interval) and the margin (95% CI) per step; ``--json`` writes the curve.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.evaluate import duplicate_eval  # noqa: E402
from agents.players.policy import load_network_policy, model_checksum  # noqa: E402
from agents.players.registry import load_policy  # noqa: E402
from agents.spec import make_spec  # noqa: E402
from agents.training.iterate import net_path, step_dir  # noqa: E402

CURVE_FORMAT = 1


def run_game(run: Path) -> str:
    """The game of the run directory ``run`` (its ``run.json``; a directory without one is refused)."""
    meta = run / "run.json"
    if not meta.is_file():
        raise ValueError(f"{run} holds no run.json: not a run directory of tarot-iterate")
    return json.loads(meta.read_text())["config"]["game"]


def step_core_seconds(run: Path, k: int) -> float:
    """The CPU seconds step ``k`` used: labelling (rank 0's CPU seconds times the processes), fit and match."""
    rec = json.loads((step_dir(run, k) / "match.json").read_text())
    return (float(rec["label_cpu_seconds"]) * int(rec["processes"]) + float(rec.get("fit_seconds") or 0)
            + float(rec["match"].get("seconds") or 0))


def _cache(run: Path, env_id: str) -> dict:
    path = run / "curve.json"
    if path.is_file():
        cache = json.loads(path.read_text())
        if cache.get("format") == CURVE_FORMAT and cache.get("env_id") == env_id:
            return cache
    return {"format": CURVE_FORMAT, "env_id": env_id, "results": {}}


def learning_curve(run_dir: str | Path, against: list[str], deals: int, seed: int, log=print) -> dict:
    """Every network of the run against each of ``against`` on ``deals`` duplicate deals of ``seed``
    (the module docstring); returns ``{"game", "deals", "seed", "against", "points": [...]}``, one point per
    ``net_<k>``: its checksum, whether step ``k - 1`` promoted it, the core-hours spent before it and each
    opponent's result (``DuplicateResult.as_dict``)."""
    run = Path(run_dir)
    game = run_game(run)
    spec = make_spec(game)
    cache = _cache(run, spec.env_id)
    points, spent = [], 0.0
    k = 0
    while net_path(run, k).is_file():
        if k > 0:
            if not (step_dir(run, k - 1) / "match.json").is_file():
                break  # a step under way: its network is not final
            spent += step_core_seconds(run, k - 1)
        net = load_network_policy(net_path(run, k), game)
        digest = model_checksum(net.model.state_dict())
        promoted = None if k == 0 else bool(
            json.loads((step_dir(run, k - 1) / "match.json").read_text())["match"]["promoted"])
        results = {}
        for opp in against:
            key = f"{digest}|{opp}|{deals}|{seed}"
            if key not in cache["results"]:
                r = duplicate_eval(spec, net, load_policy(opp, game, seed=seed), deals=deals, seed=seed)
                cache["results"][key] = r.as_dict()
                log(f"net_{k} ({digest[:12]}) vs {opp}: {r}")
                _save(run, cache)
            results[opp] = cache["results"][key]
        points.append({"net": k, "checksum": digest, "promoted": promoted, "core_hours": spent / 3600,
                       "results": results})
        k += 1
    if not points:
        raise ValueError(f"{run} holds no network (net_0.pt)")
    return {"game": game, "env_id": spec.env_id, "deals": deals, "seed": seed, "against": list(against),
            "points": points}


def _save(run: Path, cache: dict) -> None:
    tmp = run / "curve.json.tmp"
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    tmp.replace(run / "curve.json")


def curve_table(curve: dict) -> str:
    """The curve as a Markdown table: one row per network, one column per opponent (won %, margin)."""
    head = "| network | promoted | core-hours before | " + " | ".join(
        f"vs `{o}`: won % [95%], margin ± CI" for o in curve["against"]) + " |"
    rows = [head, "|---|---|---:|" + "---:|" * len(curve["against"])]
    for p in curve["points"]:
        cells = []
        for o in curve["against"]:
            r = p["results"][o]
            lo, hi = r["win_ci95"]
            cells.append(f"{100 * r['win_share']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}], "
                         f"{r['mean_margin']:+.1f} ± {r['ci95']:.1f}")
        promoted = "start" if p["promoted"] is None else ("yes" if p["promoted"] else "no (the same network)")
        rows.append(f"| `net_{p['net']}` | {promoted} | {p['core_hours']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot_curve(curve: dict, out: str | Path) -> None:
    """The share of deals won (95% Wilson interval) and the mean margin (95% CI) of each network, by step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = curve["points"]
    x = [p["net"] for p in pts]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for n, opp in enumerate(curve["against"]):
        rs = [p["results"][opp] for p in pts]
        won = [100 * r["win_share"] for r in rs]
        err = [[w - 100 * r["win_ci95"][0] for w, r in zip(won, rs)],
               [100 * r["win_ci95"][1] - w for w, r in zip(won, rs)]]
        axes[0].errorbar(x, won, yerr=err, capsize=3, marker="o", label=opp, color=f"C{n}")
        axes[1].errorbar(x, [r["mean_margin"] for r in rs], yerr=[r["ci95"] for r in rs], capsize=3, marker="o",
                         label=opp, color=f"C{n}")
    labels = [f"{p['net']}\n{p['core_hours']:.2f} h" for p in pts]
    axes[0].axhline(50, color="grey", lw=0.8)
    axes[1].axhline(0, color="grey", lw=0.8)
    axes[0].set(title=f"{curve['game']}: deals won (%, 95% interval), {curve['deals']} duplicate deals",
                xlabel="network (step; core-hours spent before it)", ylabel="won %")
    axes[1].set(title="margin (game points a deal, 95% CI)", xlabel="network (step; core-hours spent before it)",
                ylabel="points / deal")
    for ax in axes:
        ax.set_xticks(x, labels)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a tarot-iterate run directory (run_dir)")
    ap.add_argument("--against", action="append",
                    help="a reference player, once per player (agents.players.registry names: random, heuristic, "
                         "'pimc:worlds=64,rollout=random', a checkpoint ...; default: random and heuristic)")
    ap.add_argument("--deals", type=int, default=200, help="duplicate deals per network and opponent")
    ap.add_argument("--seed", type=int, default=7, help="seed of the deals and of the opponents")
    ap.add_argument("--png", help="write the plot here")
    ap.add_argument("--json", help="write the curve here")
    ns = ap.parse_args(argv)
    try:
        curve = learning_curve(ns.run, ns.against or ["random", "heuristic"], ns.deals, ns.seed)
    except ValueError as e:
        print(f"learning_curve.py: error: {e}", file=sys.stderr)
        return 2
    print(curve_table(curve))
    if ns.png:
        plot_curve(curve, ns.png)
    if ns.json:
        Path(ns.json).write_text(json.dumps(curve, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
