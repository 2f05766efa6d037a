"""The arena: any set of policies (baselines, checkpoints) play duplicate deals, every pair in turn.

Duplicate deals. A deal is a seed: ``Game(config, seed)`` deals the same cards to the same seats
whatever the players do. Each deal is played twice per pair: policy A on team 0 (seats 0 and 2; in
Millone seat 0) against B, then with the teams exchanged (A on seats 1 and 3 / seat 1), so each side
plays both sets of cards and the card luck cancels. The deal's **margin** is the mean over the two
plays of A's side's deal score minus B's (game points; Partita ±40 per deal, Ottocento and Millone
the hand scores). One deal = the first deal (hand) of a game: Partita's deal, Ottocento's and
Millone's first hand (a hand thrown in *a monte* counts as margin 0; a Millone game claimed
before the discard counts its claim score).

Per pair the arena reports the mean margin per deal with a **bootstrap 95% confidence interval**
(percentile method, ``bootstrap`` resamples of the deals), the share of deals won by A (margin > 0)
and tied. Every policy gets a **Bradley–Terry rating** fitted on all pairs' per-deal results (a deal
won = 1, tied = ½; one virtual tie per pair keeps the fit finite), on the Elo scale: a rating
difference of 400 means 10:1 odds of winning a duplicate deal; ``random`` is anchored at 1000 when
present (else the mean is 1000).

Parallel and reproducible. The deal seeds come from ``seed``; the deals are cut into fixed chunks of
``chunk`` deals, each chunk of each pair is one task with its own policy seeds (``SeedSequence([seed,
pair, chunk])``), and tasks run in ``workers`` processes. The result depends only on ``seed``, the
policies and the options — not on the number of workers.

Outputs (``write_outputs``): a terminal table, ``arena.md`` (Markdown), ``pairs.csv``,
``ratings.csv``, ``arena.json`` and ``arena.png`` (matplotlib, the ``arena`` extra).
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["PairResult", "ArenaResult", "run_arena", "bootstrap_ci", "bradley_terry", "write_outputs", "main"]

DEFAULT_OPTIONS: dict = {}  # per game; the arena plays only first deals, so none is needed


@dataclass
class PairResult:
    a: str
    b: str
    deals: int
    mean_margin: float
    ci_low: float
    ci_high: float
    win_share: float
    tie_share: float
    margins: np.ndarray = field(repr=False)

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "deals": self.deals, "mean_margin": self.mean_margin,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "win_share": self.win_share,
                "tie_share": self.tie_share}


@dataclass
class ArenaResult:
    game: str
    policies: list[str]        # display names (unique)
    sources: list[str]         # what was loaded: baseline names or checkpoint paths
    deals: int
    seed: int
    options: dict
    pairs: list[PairResult]
    ratings: dict[str, float]

    def as_dict(self) -> dict:
        return {"game": self.game, "policies": self.policies, "sources": self.sources, "deals": self.deals,
                "seed": self.seed, "options": self.options, "pairs": [p.as_dict() for p in self.pairs],
                "ratings": self.ratings}


# --------------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------------
def bootstrap_ci(x: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``x`` (deterministic for a given ``seed``)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = max(1, 2_000_000 // max(len(x), 1))
    for i in range(0, resamples, step):
        k = min(step, resamples - i)
        means[i:i + k] = x[rng.integers(len(x), size=(k, len(x)))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bradley_terry(names: list[str], pairs: list[tuple[int, int, float, float]], anchor: str | None = "random",
                  iters: int = 10_000, tol: float = 1e-12) -> dict[str, float]:
    """Bradley–Terry strengths by the MM algorithm (Hunter 2004), on the Elo scale.

    ``pairs``: ``(i, j, wins_i, games)`` with ``wins_i`` the (half-counted ties) deals ``i`` won
    against ``j``. One virtual tie per pair (½ win each) keeps every strength finite.
    Returns ``{name: rating}``, 400·log10(strength), shifted so ``anchor`` is 1000 (else mean 1000).
    """
    k = len(names)
    W = np.zeros((k, k))
    G = np.zeros((k, k))
    for i, j, w, n in pairs:
        W[i, j] += w + 0.5
        W[j, i] += (n - w) + 0.5
        G[i, j] += n + 1
        G[j, i] += n + 1
    p = np.ones(k)
    wins = W.sum(axis=1)
    for _ in range(iters):
        denom = (G / (p[:, None] + p[None, :])).sum(axis=1)
        new = np.where(denom > 0, wins / np.where(denom > 0, denom, 1), p)
        new /= math.exp(np.log(new).mean())
        if np.max(np.abs(new - p)) < tol:
            p = new
            break
        p = new
    r = 400.0 * np.log10(p)
    shift = 1000.0 - (r[names.index(anchor)] if anchor in names else r.mean())
    return {n: float(v + shift) for n, v in zip(names, r)}


# --------------------------------------------------------------------------------------------------
# playing
# --------------------------------------------------------------------------------------------------
_CACHE: dict = {}


def _policy(source: str, game: str, options: dict, seed: int):
    """Load (once per process) and reseed a policy for one task."""
    from .registry import is_search_name, load_policy

    key = (source, game, json.dumps(options, sort_keys=True))
    if source in ("random", "heuristic") or is_search_name(source):
        return load_policy(source, game, options=options, seed=seed)
    if key not in _CACHE:
        _CACHE[key] = load_policy(source, game, options=options, seed=seed)
    pol = _CACHE[key]
    if hasattr(pol, "gen"):
        pol.gen.manual_seed(seed)
    return pol


def _task(args) -> tuple[int, int, np.ndarray]:
    """One chunk of one pair: returns (pair index, chunk index, margins)."""
    game, options, pair_idx, chunk_idx, src_a, src_b, seeds, root = args
    import sys

    if "torch" in sys.modules:  # one thread per worker process: the workers are the parallelism
        sys.modules["torch"].set_num_threads(1)
    from .evaluate import play_first_deals
    from .rollout import make_spec

    spec = make_spec(game, options)
    ss = np.random.SeedSequence([root, pair_idx, chunk_idx]).generate_state(2)
    a = _policy(src_a, game, options, int(ss[0]))
    b = _policy(src_b, game, options, int(ss[1]))
    d0 = play_first_deals(spec, seeds, [(a, b)] * len(seeds))   # A holds team 0
    d1 = -play_first_deals(spec, seeds, [(b, a)] * len(seeds))  # A holds team 1: the cards exchanged
    return pair_idx, chunk_idx, (d0 + d1) / 2.0


def _labels(sources: list[str]) -> list[str]:
    from .registry import policy_label

    out: list[str] = []
    for s in sources:
        base = policy_label(s)
        name, k = base, 2
        while name in out:
            name, k = f"{base}#{k}", k + 1
        out.append(name)
    return out


def run_arena(game: str, sources: list[str], deals: int = 200, seed: int = 0, workers: int = 1,
              options: dict | None = None, chunk: int = 25, bootstrap: int = 2000,
              pairs: list[tuple[int, int]] | None = None) -> ArenaResult:
    """Every pair of ``sources`` (baseline names or checkpoint paths) on ``deals`` duplicate deals."""
    import tarot_env

    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    if len(sources) < 2:
        raise ValueError("the arena needs at least two policies")
    if deals < 1:
        raise ValueError(f"deals must be at least 1 (got {deals})")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 (got {chunk})")
    opts = dict(DEFAULT_OPTIONS.get(game, {}))
    opts.update(options or {})
    from .registry import load_policy

    for s in sources:  # fail early, in this process, with the loader's message
        load_policy(s, game, options=opts)
    names = _labels(sources)
    if pairs is None:
        pairs = [(i, j) for i in range(len(sources)) for j in range(i + 1, len(sources))]
    deal_seeds = [int(s) for s in np.random.default_rng(seed).integers(2**62, size=deals)]
    chunks = [deal_seeds[i:i + chunk] for i in range(0, deals, chunk)]
    tasks = [(game, opts, p, c, sources[i], sources[j], chunks[c], seed)
             for p, (i, j) in enumerate(pairs) for c in range(len(chunks))]
    margins = {p: [None] * len(chunks) for p in range(len(pairs))}
    if workers <= 1:
        results = map(_task, tasks)
        for p, c, m in results:
            margins[p][c] = m
    else:
        import multiprocessing as mp

        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        with ctx.Pool(workers) as pool:
            for p, c, m in pool.imap_unordered(_task, tasks):
                margins[p][c] = m
    out: list[PairResult] = []
    bt = []
    for p, (i, j) in enumerate(pairs):
        m = np.concatenate(margins[p])
        lo, hi = bootstrap_ci(m, bootstrap, seed=int(np.random.SeedSequence([seed, p, 10**6]).generate_state(1)[0]))
        win, tie = float((m > 0).mean()), float((m == 0).mean())
        out.append(PairResult(names[i], names[j], len(m), float(m.mean()), lo, hi, win, tie, m))
        bt.append((i, j, float((m > 0).sum() + 0.5 * (m == 0).sum()), float(len(m))))
    ratings = bradley_terry(names, bt)
    return ArenaResult(game, names, list(sources), deals, seed, opts, out, ratings)


# --------------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------------
def _pair_rows(res: ArenaResult) -> list[list[str]]:
    return [[p.a, p.b, str(p.deals), f"{p.mean_margin:+.2f}", f"[{p.ci_low:+.2f}, {p.ci_high:+.2f}]",
             f"{100 * p.win_share:.1f}%", f"{100 * p.tie_share:.1f}%"] for p in res.pairs]


def _rating_rows(res: ArenaResult) -> list[list[str]]:
    order = sorted(res.policies, key=lambda n: -res.ratings[n])
    rows = []
    for n in order:
        ms = [p.mean_margin if p.a == n else -p.mean_margin for p in res.pairs if n in (p.a, p.b)]
        rows.append([n, f"{res.ratings[n]:.0f}", f"{np.mean(ms):+.2f}" if ms else "-"])
    return rows


PAIR_HEAD = ["A", "B", "deals", "margin A−B / deal", "95% CI (bootstrap)", "A won", "tied"]
RATING_HEAD = ["policy", "rating (Bradley–Terry, Elo scale)", "mean margin vs the others"]


def format_table(head: list[str], rows: list[list[str]]) -> str:
    w = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(head)]
    line = lambda r: "  ".join(c.rjust(w[k]) if k else c.ljust(w[k]) for k, c in enumerate(r))  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * x for x in w)] + [line(r) for r in rows])


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def format_terminal(res: ArenaResult) -> str:
    return (f"{res.game}: {res.deals} duplicate deals per pair (each played twice, teams exchanged), "
            f"seed {res.seed}\n\n" + format_table(PAIR_HEAD, _pair_rows(res)) + "\n\n"
            + format_table(RATING_HEAD, _rating_rows(res)))


def format_markdown(res: ArenaResult, command: str | None = None) -> str:
    parts = [f"### {res.game}: {res.deals} duplicate deals per pair, seed {res.seed}", ""]
    if command:
        parts += [f"`{command}`", ""]
    parts += [markdown_table(PAIR_HEAD, _pair_rows(res)), "", markdown_table(RATING_HEAD, _rating_rows(res)), ""]
    return "\n".join(parts)


def write_outputs(res: ArenaResult, out_dir: str | os.PathLike, command: str | None = None) -> list[Path]:
    """``arena.md``, ``pairs.csv``, ``ratings.csv``, ``arena.json`` and (with matplotlib) ``arena.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    (out / "arena.md").write_text(format_markdown(res, command))
    with open(out / "pairs.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["game", "a", "b", "deals", "mean_margin", "ci_low", "ci_high", "win_share", "tie_share"])
        for p in res.pairs:
            wr.writerow([res.game, p.a, p.b, p.deals, f"{p.mean_margin:.6f}", f"{p.ci_low:.6f}",
                         f"{p.ci_high:.6f}", f"{p.win_share:.6f}", f"{p.tie_share:.6f}"])
    with open(out / "ratings.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["game", "policy", "source", "rating"])
        for n, s in zip(res.policies, res.sources):
            wr.writerow([res.game, n, s, f"{res.ratings[n]:.3f}"])
    (out / "arena.json").write_text(json.dumps(res.as_dict(), indent=1))
    written += [out / "arena.md", out / "pairs.csv", out / "ratings.csv", out / "arena.json"]
    png = plot(res, out / "arena.png")
    if png is not None:
        written.append(png)
    return written


def plot(res: ArenaResult, path: Path) -> Path | None:
    """Ratings as bars and each pair's margin with its CI; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[arena]'): no PNG chart written")
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.6 * max(len(res.pairs), len(res.policies)) + 2.5))
    order = sorted(res.policies, key=lambda n: res.ratings[n])
    ax1.barh(order, [res.ratings[n] for n in order], color="tab:blue")
    ax1.set_xlabel("rating (Bradley–Terry, Elo scale)")
    lo = min(res.ratings.values())
    ax1.set_xlim(min(lo - 100, 900), max(res.ratings.values()) + 100)
    ax1.set_title(f"{res.game}: ratings")
    labels = [f"{p.a} vs {p.b}" for p in res.pairs]
    y = np.arange(len(res.pairs))
    means = np.array([p.mean_margin for p in res.pairs])
    err = np.array([[p.mean_margin - p.ci_low for p in res.pairs], [p.ci_high - p.mean_margin for p in res.pairs]])
    ax2.errorbar(means, y, xerr=err, fmt="o", color="tab:red", capsize=4)
    ax2.axvline(0, color="grey", lw=0.8)
    ax2.set_yticks(y, labels)
    ax2.set_xlabel("margin A − B per deal (95% bootstrap CI)")
    ax2.set_title(f"{res.deals} duplicate deals per pair")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def _parse_options(items: list[str]) -> dict:
    opts: dict = {}
    for it in items or []:
        if "=" not in it:
            raise SystemExit(f"option {it!r} must be key=value")
        k, v = it.split("=", 1)
        try:
            opts[k] = json.loads(v)
        except json.JSONDecodeError:
            opts[k] = v
    return opts


def main(argv: list[str] | None = None) -> int:
    """``tarot-arena --game partita random heuristic checkpoints/x/final.pt --deals 500 --workers 2``."""
    import argparse
    import shlex
    import sys
    import time

    p = argparse.ArgumentParser(prog="tarot-arena", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("policies", nargs="+", help="baseline names (random, heuristic), pimc[:worlds=N,rollout=R,time=S] or checkpoint paths")
    p.add_argument("--game", required=True, help="partita, ottocento or millone")
    p.add_argument("--deals", type=int, default=200, help="duplicate deals per pair (each played twice)")
    p.add_argument("--seed", type=int, default=0, help="the deals and the policies' seeds (same seed, same result)")
    p.add_argument("--workers", type=int, default=1, help="processes (the result does not depend on it)")
    p.add_argument("--chunk", type=int, default=25, help="deals per task")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for the CI")
    p.add_argument("--out", default=None, help="folder for arena.md/.csv/.json/.png (default arena/<game>)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="rules/env option of the game, e.g. -o partita_signals=bolognese3")
    ns = p.parse_args(argv)
    t = time.time()
    try:
        res = run_arena(ns.game, ns.policies, ns.deals, ns.seed, ns.workers, _parse_options(ns.option),
                        ns.chunk, ns.bootstrap)
    except ValueError as e:
        print(f"tarot-arena: error: {e}", file=sys.stderr)
        return 2
    print(format_terminal(res))
    out = ns.out or os.path.join("arena", ns.game)
    cmd = "tarot-arena " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    files = write_outputs(res, out, cmd)
    print(f"\nwritten: {', '.join(str(f) for f in files)}  ({time.time() - t:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
