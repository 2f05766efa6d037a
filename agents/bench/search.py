"""Determinisation and PIMC figures (docs/search.md): worlds per second, decisions per second, strength.

    tarot-bench search worlds                      # sampler: worlds/s per game (rows, rules objects)
    tarot-bench search decisions --decisions 12    # PIMC at the default budget (64 worlds,
                                                   # heuristic rollouts): decisions/s
    tarot-bench search decisions --rollout ppo --engine vector,rules
                                                   # network rollouts in the batched engine
                                                   # vs on the rules objects
    tarot-bench search decisions --rollout ppo --prior ppo --engine vector
                                                   # the network-guided search (ppo+pimc)
    tarot-bench search decisions --rollout ppo --prior ppo --depth 8
                                                   # its rollouts cut after 8 steps, valued by the critic
    tarot-bench search strength --deals 20 --worlds 8 --rollout heuristic
                                                   # duplicate deals vs random and heuristic

``worlds``: positions are the decision points of the first deal of seeded games played at random;
at each, ``Determinizer(game, seat)`` for the seat to act and ``n`` worlds drawn, the set-up timed with them:
into engine rows (``sample_rows``, the path the search uses) and as rules objects (``sample``).
``decisions``: PIMC decisions with at least two legal actions, at positions of the same kind.
``strength``: ``agents.evaluation.evaluate.duplicate_eval`` (each deal played twice with the seats exchanged;
mean margin in game points per deal with its 95% CI) of PIMC against each opponent.
Everything is seeded; the timings depend on the machine (the figures in docs/search.md say which).
One line per measurement on stdout; ``--json`` writes them, keyed by game (``worlds``: ``rows_per_s``,
``rows_per_cpu_s`` (rows), ``worlds_per_s``, ``worlds_per_cpu_s`` (rules objects), ``fallbacks``; ``decisions``:
``decisions_per_s``, ``decisions_per_cpu_s``; keyed ``<game>/<engine>`` when ``--engine`` lists several) or by
``<game>/<opponent>`` (``strength``).
"""
from __future__ import annotations

import argparse
import json
import time

from ._common import csv_list, games_arg, positive_int

HELP = "the search player (PIMC): sampler worlds/s, decisions/s, strength on duplicate deals"
WHAT = ("worlds", "decisions", "strength")
ENGINES = ("auto", "vector", "rules", "stepped")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("what", choices=WHAT, help="what to measure")
    ap.add_argument("--seed", type=int, default=0, help="seed of the positions, the worlds and the deals")
    ap.add_argument("--n", type=positive_int, default=64, help="worlds: worlds drawn per position")
    ap.add_argument("--positions", type=positive_int, default=30, help="worlds: positions per game")
    ap.add_argument("--decisions", type=positive_int, default=10, help="decisions: decisions timed per game")
    ap.add_argument("--worlds", type=positive_int, default=64, help="PIMC worlds per decision")
    ap.add_argument("--rollout", default="heuristic", help="PIMC rollout policy")
    ap.add_argument("--prior", default=None, help="decisions: a network guiding the search (ppo+pimc is "
                                                  "--rollout ppo --prior ppo)")
    ap.add_argument("--depth", type=int, default=0, help="decisions: rollout steps before the network's critic "
                                                         "values a world (0: to the deal's end; network rollouts)")
    ap.add_argument("--engine", default="auto",
                    help="decisions: where the rollouts run, auto|vector|rules|stepped, or several separated "
                         "by commas (each timed on the same positions), e.g. vector,rules or auto,stepped")
    ap.add_argument("--deals", type=positive_int, default=20, help="strength: duplicate deals per opponent")
    ap.add_argument("--games", default="all", help="comma-separated games, or all")
    ap.add_argument("--opponents", default="random,heuristic", help="strength: comma-separated opponents")
    ap.add_argument("--json", default=None, help="also write the figures to this file")


def positions(game: str, count: int, seed: int, min_legal: int = 1):
    """``count`` decision points of first deals of seeded games played uniformly at random."""
    import numpy as np

    from agents.play.human import new_game

    rng = np.random.default_rng(seed)
    out, s = [], 0
    while len(out) < count:
        g = new_game(game, seed * 1000 + s)
        s += 1
        while not g.game_over and not g.history and len(out) < count:
            legal = g.legal_actions()
            if len(legal) >= min_legal and rng.random() < 0.1:
                out.append(g.clone())
            g.apply(legal[rng.integers(len(legal))])
    return out


def _time_worlds(pos, n: int, seed: int, rows: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds to draw ``n`` worlds at each position of ``pos`` for the seat to act, the
    ``Determinizer`` set-up included: into engine rows (``sample_rows``, the search's path) or as rules objects
    (``sample``); and the fallbacks."""
    import numpy as np

    from tarot_env.sampler import Determinizer

    rng = np.random.default_rng(seed)
    t, c = time.perf_counter(), time.process_time()
    fallback = 0
    for g in pos:
        det = Determinizer(g, g.current)
        det.sample_rows(n, rng) if rows else det.sample(n, rng)
        fallback += det.stats["fallback"]
    return time.perf_counter() - t, max(time.process_time() - c, 1e-9), fallback


def bench_worlds(n: int, count: int, seed: int, games) -> dict:
    """Worlds a second at ``count`` positions per game, ``n`` a position: drawn into rows (the search's path,
    ``rows_per_s``, ``rows_per_cpu_s``) and as rules objects (``worlds_per_s``, ``worlds_per_cpu_s``), after one
    position's draws (not timed) have loaded the compiled kernels."""
    res = {}
    for game in games:
        pos = positions(game, count, seed)
        _time_worlds(pos[:1], n, seed, rows=True)  # warm-up (not timed)
        rw, rc, rf = _time_worlds(pos, n, seed, rows=True)
        dt, dc, fallback = _time_worlds(pos, n, seed, rows=False)
        w = n * count
        res[game] = {"positions": count, "worlds": w, "seconds": round(dt, 2), "cpu_seconds": round(dc, 2),
                     "worlds_per_s": round(w / dt, 1), "worlds_per_cpu_s": round(w / dc, 1),
                     "rows_per_s": round(w / rw, 1), "rows_per_cpu_s": round(w / rc, 1), "fallbacks": fallback + rf}
        print(f"{game:10s} {w} worlds at {count} positions: rows (sample_rows, the search's) {w / rw:9.1f} worlds/s "
              f"wall, {w / rc:9.1f} per CPU second; rules objects (sample) {w / dt:8.1f} wall, {w / dc:8.1f} per CPU "
              f"second (fallbacks {fallback + rf})", flush=True)
    return res


def bench_decisions(worlds: int, rollout: str, count: int, seed: int, engines=("auto",), games=None,
                    prior: str | None = None, depth: int = 0) -> dict:
    """PIMC decisions per second at ``count`` positions per game, for each rollout engine of ``engines``
    (``auto``, ``vector``: the batched engine, ``rules``: the rules objects, ``stepped``: the batched engine
    stepped from Python also for uniform rollouts) in turn, on the same
    positions with the same seed. Before the timing, one decision per engine (not timed) loads the
    rollout network and the compiled engine. ``prior`` (e.g. ``ppo``): the network-guided search, which
    searches only that network's ``top_k`` (4) most probable actions; ``depth``: the rollouts cut after that many
    steps and valued by the rollout network's critic."""
    import tarot_env
    from agents.players.pimc import PIMCPolicy

    if prior is not None or rollout not in ("random", "heuristic"):
        import torch

        # one core, as the figures are quoted: a search's network batches (worlds x actions rows) gain little
        # from more threads, and on a busy machine torch's waiting threads cost several times the CPU
        torch.set_num_threads(1)
    res = {}
    for game in games or tuple(tarot_env.GAMES):
        pos = positions(game, count, seed, min_legal=2)
        for engine in engines:
            p = PIMCPolicy(game, worlds=worlds, rollout=rollout, seed=seed, engine=engine, prior=prior, depth=depth)
            p.act_game(positions(game, 1, seed + 1, min_legal=2)[0])  # warm-up (not timed)
            t, c = time.perf_counter(), time.process_time()
            for g in pos:
                p.act_game(g)
            dt, dc = time.perf_counter() - t, max(time.process_time() - c, 1e-9)
            key = game if tuple(engines) == ("auto",) else f"{game}/{engine}"
            res[key] = {"decisions": count, "worlds": worlds, "rollout": rollout, "prior": prior, "depth": depth,
                        "engine": p.engine,
                        "seconds": round(dt, 2), "cpu_seconds": round(dc, 2), "decisions_per_s": round(count / dt, 3),
                        "decisions_per_cpu_s": round(count / dc, 3)}
            print(f"{game:10s} {count} decisions, {worlds} worlds, {rollout} rollouts, prior {prior}, depth {depth}, "
                  f"{p.engine:6s} engine: "
                  f"{count / dt:.3f} decisions/s wall ({dt / count:.2f} s each), {count / dc:.3f} per CPU second "
                  f"({dc / count:.2f} CPU s each)", flush=True)
    return res


def bench_strength(deals: int, worlds: int, rollout: str, seed: int, games, opponents) -> dict:
    from agents.evaluation.evaluate import duplicate_eval
    from agents.players.pimc import PIMCPolicy
    from agents.players.registry import load_policy
    from agents.spec import make_spec

    res = {}
    for game in games:
        spec = make_spec(game, {})
        for opp in opponents:
            p = PIMCPolicy(game, worlds=worlds, rollout=rollout, seed=seed)
            t, c = time.perf_counter(), time.process_time()
            r = duplicate_eval(spec, p, load_policy(opp, game, seed=seed), deals=deals, seed=seed)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            res[f"{game}/{opp}"] = dict(r.as_dict(), seconds=round(dt, 1), cpu_seconds=round(dc, 1),
                                        worlds=worlds, rollout=rollout)
            print(f"{game:10s} pimc(worlds={worlds}, {rollout}) vs {opp:9s}: {r}  [{dt:.0f} s, "
                  f"{dc:.0f} CPU s]", flush=True)
    return res


def run(ns: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    import tarot_env

    games = games_arg(ns.games, list(tarot_env.GAMES), ap)
    engines = tuple(csv_list(ns.engine))
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        ap.error(f"--engine: unknown engine(s) {', '.join(bad) or repr(ns.engine)}; choose from {', '.join(ENGINES)}")
    if ns.what == "strength" and ns.deals < 2:
        ap.error("--deals must be at least 2 (the 95% CI needs two deals)")
    if ns.what == "worlds":
        out = bench_worlds(ns.n, ns.positions, ns.seed, games)
    elif ns.what == "decisions":
        out = bench_decisions(ns.worlds, ns.rollout, ns.decisions, ns.seed, engines, games, prior=ns.prior,
                              depth=ns.depth)
    else:
        out = bench_strength(ns.deals, ns.worlds, ns.rollout, ns.seed, games, csv_list(ns.opponents))
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(out, f, indent=1)
    return out
