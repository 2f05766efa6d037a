"""Throughput of the batched self-play engines (``tarot_env.make_vec``), against peers in the same run.

For each game with a batched engine and each batch size, steps the batch with uniformly random legal
actions for about ``--seconds`` and reports decisions per second: every decision includes the acting
seat's float32 observation and its action mask for the next decision (built by ``step``), the rewards
and the automatic resets. Two figures per row:

* ``env``: time inside ``VecEnv.step`` only (what a trainer pays for the environment);
* ``+policy``: the whole loop including a vectorised uniform-random policy over the masks
  (``(rng.random(mask.shape) * mask).argmax(1)``), the closest analogue of the peers' loops, whose
  Python random choice is inside their timer.

``--sparse`` adds each game with ``make_vec(..., obs_format="sparse")`` (the observation as its nonzero
features, what the trainer and the search ask for) and ``--masks-only`` each game without the observation.

After each repeat of ours it runs OpenSpiel's ``tarok`` (C++, no observation tensors) and ``hearts``
(numpy observer) through ``../shared/bench/peers.py`` with the peers' python (interleaved, so both
see the same load on a shared machine), prints the ratios of the medians and the paired ratios (each
repeat of ours against the peers' run right after it), and estimates the memory-traffic limit per
decision from a measured copy bandwidth and the output work alone (``output floor``).

    tarot-bench batched                              # every game with a batched engine, batches 256,1024,4096
    tarot-bench batched --batch-sizes 1024 --seconds 2 --no-peers
    tarot-bench batched --signals                    # also partita with signals on
    tarot-bench batched --masks-only --games ottocento   # also without the observation
    taskset -c 0 tarot-bench batched --pin --batch-sizes 2048 --sparse --masks-only   # dense, sparse, masks
    tarot-bench batched --games millone --engines vector,loop --no-peers   # vs the loop engine
    taskset -c 0 tarot-bench batched --games ottocento --engines vector,loop \\
        --batch-sizes 256,1024 --no-peers            # Ottocento's batched engine vs the loop
    taskset -c 0 tarot-bench batched                 # one core (also: --pin)

Environment: ``TAROCCHINI_PEERS_PYTHON`` (default ``~/.cache/tarocchini-peers/bin/python``, else made by
``../shared/bench/setup.sh``), ``TAROCCHINI_SHARED`` (default ``../shared``). Results: ``--json``
(default ``runs/bench/batched.json``, under the ignored ``runs/``, never the repository's root:
``machine``, ``runs``, ``medians``, ``peers``, ``copy_bandwidth_bytes_per_s``, ``floor_bytes_per_decision``,
``output_floor_decisions_per_s``, ``paired_ratios``, ``ratios``) and a
Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from ._common import csv_list, games_arg, int_list, machine, positive_float, positive_int, run_peers

HELP = "batched-engine (make_vec) decisions/s, with ratios to OpenSpiel peers measured in the same run"
PEER_KEYS = "os_tarok4_full,os_hearts_obsnp"
ENGINES = ("vector", "loop")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--games", default="all", help="comma-separated games, or all (those with a vectorised engine)")
    ap.add_argument("--engines", default="vector",
                    help="comma-separated engines to measure: vector (the batched engine), loop (one AEC "
                         "env per row, the reference path; slow: give it small --loop-batch-sizes)")
    ap.add_argument("--batch-sizes", type=int_list, default="256,1024,4096", help="comma-separated num_envs values")
    ap.add_argument("--loop-batch-sizes", type=int_list, default=None,
                    help="num_envs values for the loop engine (default: --batch-sizes)")
    ap.add_argument("--seconds", type=positive_float, default=3.0, help="seconds per measurement")
    ap.add_argument("--reps", type=positive_int, default=3, help="interleaved repeats (medians are reported)")
    ap.add_argument("--signals", action="store_true", help="also measure partita with partita_signals=bolognese3")
    ap.add_argument("--masks-only", action="store_true",
                    help="also measure each game with make_vec(..., observe=False): the masks and the rules "
                         "without the observation (what the rest of a step costs)")
    ap.add_argument("--sparse", action="store_true",
                    help="also measure each game with make_vec(..., obs_format='sparse'): the observation as its "
                         "nonzero features (int32 columns, float32 values), written by the engine")
    ap.add_argument("--peers", default=PEER_KEYS, help="peers.py keys measured in the same run")
    ap.add_argument("--peer-scale", type=positive_float, default=0.25, help="peers.py --scale")
    ap.add_argument("--peer-reps", type=positive_int, default=1, help="peers.py --reps after each of our repeats")
    ap.add_argument("--no-peers", action="store_true", help="measure ours only")
    ap.add_argument("--pin", action="store_true", help="pin this process and the peers to one core")
    ap.add_argument("--seed", type=int, default=0, help="seed of the engines and of the random play")
    ap.add_argument("--json", default="runs/bench/batched.json", help="results file")


def measure(game: str, batch: int, seconds: float, seed: int, engine: str = "vector", **config) -> dict:
    """Random legal play of a batch for about ``seconds`` (after a short warm-up)."""
    import numpy as np

    from tarot_env.vector import make_vec

    venv = make_vec(game, batch, seed=seed, engine=engine, **config)
    out = venv.reset()
    rng = np.random.default_rng(seed)
    step = venv.step

    def policy(mask):
        return (rng.random(mask.shape, dtype=np.float32) * mask).argmax(1)

    warm = time.perf_counter()
    while time.perf_counter() - warm < min(0.5, seconds / 4):
        out = step(policy(out.mask), validate=False)
    decisions = episodes = steps = 0
    t_env = c_env = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        for _ in range(54):
            a = policy(out.mask)
            t1, c1 = time.perf_counter(), time.process_time()
            out = step(a, validate=False)
            t_env += time.perf_counter() - t1
            c_env += time.process_time() - c1
            episodes += int(out.done.sum())
        steps += 54
        decisions += 54 * batch
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(game=game, engine=engine, batch=batch, config=config, decisions=decisions, steps=steps,
                episodes=episodes,
                elapsed=elapsed, cpu=cpu, env_elapsed=t_env, env_cpu=c_env,
                env_decisions_per_s=decisions / t_env, env_cpu_decisions_per_s=decisions / max(c_env, 1e-9),
                loop_decisions_per_s=decisions / elapsed, loop_cpu_decisions_per_s=decisions / max(cpu, 1e-9),
                obs_size=venv.obs_size, num_actions=venv.num_actions, players=venv.num_players)


def copy_bandwidth() -> float:
    """Bytes per second of a large numpy copy (read + write counted once: the bytes copied)."""
    import numpy as np

    a = np.ones(64 * 2**20, dtype=np.uint8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, a.nbytes / (time.perf_counter() - t))
    return best


def output_floor(obs_size: int, num_actions: int, players: int, batch: int, seconds: float = 0.5) -> float:
    """Decisions/s of the output work alone, on buffers shaped like an engine's at this batch.

    Whatever the rules, a step must hand out each row's acting-seat observation as float32 and its
    mask. The cheapest numpy way we know: every seat's observation kept as one byte per feature (a
    ``[B * players, obs_size]`` bool mirror, as the numpy engines kept), one row ``take`` into a bool scratch
    and one cast into the float32 buffer, plus copying a bool mask row. Timed in thread CPU time.
    """
    import numpy as np

    rng = np.random.default_rng(0)
    mirror = rng.random((batch * players, obs_size)) < 0.1
    masks = rng.random((batch, num_actions)) < 0.3
    scratch = np.zeros((batch, obs_size), dtype=bool)
    obs = np.zeros((batch, obs_size), dtype=np.float32)
    mask = np.zeros((batch, num_actions), dtype=bool)
    rows = [np.arange(batch) * players + rng.integers(players, size=batch) for _ in range(16)]
    n, t0 = 0, time.thread_time()
    while time.thread_time() - t0 < seconds:
        for r in rows:
            np.take(mirror, r, axis=0, out=scratch, mode="clip")
            np.copyto(obs, scratch)
            np.copyto(mask, masks)
        n += len(rows)
    return n * batch / (time.thread_time() - t0)


def _configs(args: argparse.Namespace, ap: argparse.ArgumentParser) -> list[tuple[str, dict]]:
    """The (game, options) pairs measured: each game with a batched engine, its signals variant
    (``--signals``) and its masks-only run (``--masks-only``)."""
    import tarot_env

    # the games with a batched engine (tarot_env.GAMES[game].engines lists a game's engine kinds)
    vectorised = [g for g, info in tarot_env.GAMES.items() if "vector" in getattr(info, "engines", ("vector",))]
    configs = []
    for game in games_arg(args.games, vectorised, ap):
        configs.append((game, {}))
        if args.signals and game == "partita":
            configs.append((game, {"partita_signals": "bolognese3"}))
        if args.sparse:
            configs.append((game, {"obs_format": "sparse"}))
        if args.masks_only:
            configs.append((game, {"observe": False}))
    return configs


def _measure_all(args, configs, engines) -> tuple[dict[str, list[dict]], list[dict]]:
    """Every (game, options, engine, batch size) ``args.reps`` times, the peers after each repeat
    (interleaved: the same load). Returns our runs by key and the peers' runs."""
    runs: dict[str, list[dict]] = {}
    peer_runs: list[dict] = []
    for rep in range(args.reps):
        for game, cfg in configs:
            for engine in engines:
                for b in ((args.loop_batch_sizes or args.batch_sizes) if engine == "loop" else args.batch_sizes):
                    r = measure(game, b, args.seconds, args.seed, engine=engine, **cfg)
                    tag = ("+signals" if "partita_signals" in cfg else "/masks-only" if "observe" in cfg
                           else "/sparse" if "obs_format" in cfg else "")
                    key = f"{game}{tag}{'' if engine == 'vector' else '/' + engine}@{b}"
                    runs.setdefault(key, []).append(r)
                    print(f"rep{rep + 1} {key:24s} env {r['env_decisions_per_s']:11,.0f} dec/s "
                          f"(cpu {r['env_cpu_decisions_per_s']:11,.0f})  "
                          f"+policy {r['loop_decisions_per_s']:11,.0f}", file=sys.stderr, flush=True)
        if not args.no_peers:
            p = run_peers(args.peers, args.peer_scale, args.peer_reps, args.pin)
            if p:
                peer_runs.append(p)
    return runs, peer_runs


def _peer_rows(peer_runs: list[dict]) -> dict[str, dict]:
    """Each peer's row with the median decisions/s (wall and CPU) over the interleaved runs."""
    prow: dict[str, dict] = {}
    for p in peer_runs:
        for r in p.get("rows", []):
            if "decisions_per_s" in r:
                prow.setdefault(r["key"], {**r, "_all": []})["_all"].append(r)
    for r in prow.values():
        for f in ("decisions_per_s", "cpu_decisions_per_s"):
            r[f] = statistics.median(x.get(f, x["decisions_per_s"]) for x in r["_all"])
        del r["_all"]
    return prow


def _print_medians(med: dict, prow: dict) -> None:
    print("\n| " + " | ".join(["engine @ batch", "env dec/s", "env dec/s (CPU time)", "+policy dec/s",
                                *(f"env × {k} (wall / CPU)" for k in prow)]) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(prow))
    for k, m in med.items():
        ratios = [f"{m['env_decisions_per_s'] / p['decisions_per_s']:.2f} / "
                  f"{m['env_cpu_decisions_per_s'] / p.get('cpu_decisions_per_s', p['decisions_per_s']):.2f}"
                  for p in prow.values()]
        print("| " + " | ".join([k, f"{m['env_decisions_per_s']:,.0f}", f"{m['env_cpu_decisions_per_s']:,.0f}",
                                 f"{m['loop_decisions_per_s']:,.0f}", *ratios]) + " |")


def _paired_ratios(runs: dict, peer_runs: list[dict], prow: dict) -> dict[str, dict[str, list[float]]]:
    """Each repeat of ours against the peers' run right after it (the same machine state): steadier than
    the ratio of medians when the machine's speed drifts. Printed as a table."""
    paired: dict[str, dict[str, list[float]]] = {}
    if not (peer_runs and all(len(rs) == len(peer_runs) for rs in runs.values())):
        return paired
    for k, rs in runs.items():
        for i, p in enumerate(peer_runs):
            for r in p.get("rows", []):
                if "decisions_per_s" in r:
                    paired.setdefault(k, {}).setdefault(r["key"], []).append(
                        rs[i]["env_decisions_per_s"] / r["decisions_per_s"])
    print("\n| engine @ batch | " + " | ".join(f"paired × {k}: median (min–max)" for k in prow) + " |")
    print("|---|" + "---:|" * len(prow))
    for k, per in paired.items():
        print(f"| {k} | " + " | ".join(
            f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})" for v in per.values()) + " |")
    return paired


def _floors(runs: dict, med: dict, bw: float) -> tuple[int, dict[str, float]]:
    """The traffic a decision cannot avoid (the float32 observation and the mask written out, the acting
    seat's mirror row read: one byte per feature) and the output work alone on buffers of each row's
    shape, printed; returns the bytes per decision and the floors by key."""
    any_run = next(iter(runs.values()))[0]
    per_dec = any_run["obs_size"] * 4 + any_run["num_actions"] + any_run["obs_size"]
    print(f"\nmemory-traffic floor: {per_dec:,} bytes per decision (float32 observation written, mask, mirror row "
          f"read); copy bandwidth measured now {bw / 1e9:.1f} GB/s (a 64 MB copy, out of cache) -> at most "
          f"~{bw / per_dec:,.0f} decisions/s from output traffic alone")
    floors = {}
    print("\n| engine @ batch | output work alone (dec/s) | engine (env, CPU time) / output floor |\n|---|---:|---:|")
    for k, rs in runs.items():
        r0 = rs[0]
        if "/" in k:  # the loop engine, or no observation written
            continue
        floors[k] = output_floor(r0["obs_size"], r0["num_actions"], r0["players"], r0["batch"])
        print(f"| {k} | {floors[k]:,.0f} | {med[k]['env_cpu_decisions_per_s'] / floors[k]:.0%} |")
    return per_dec, floors


def run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> dict:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    engines = csv_list(args.engines)
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        ap.error(f"--engines: unknown engine(s) {', '.join(bad) or repr(args.engines)}; "
                 f"choose from {', '.join(ENGINES)}")
    configs = _configs(args, ap)
    if args.pin:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    runs, peer_runs = _measure_all(args, configs, engines)
    prow = _peer_rows(peer_runs)
    peers = {"runs": peer_runs}
    bw = copy_bandwidth()
    med = {k: {f: statistics.median(r[f] for r in rs) for f in (
        "env_decisions_per_s", "env_cpu_decisions_per_s", "loop_decisions_per_s", "loop_cpu_decisions_per_s")}
        for k, rs in runs.items()}
    _print_medians(med, prow)
    paired = _paired_ratios(runs, peer_runs, prow)
    if prow:
        print("\n| peer (same run) | decisions/s | decisions/s (CPU time) |\n|---|---:|---:|")
        for k, p in prow.items():
            print(f"| {k}: {p.get('env', '')} | {p['decisions_per_s']:,.0f} | {p.get('cpu_decisions_per_s', 0):,.0f} |")
    per_dec, floors = _floors(runs, med, bw)
    result = {
        "machine": machine(), "runs": runs, "medians": med, "peers": peers, "copy_bandwidth_bytes_per_s": bw,
        "floor_bytes_per_decision": per_dec, "output_floor_decisions_per_s": floors, "paired_ratios": paired,
        "ratios": {k: {p: m["env_decisions_per_s"] / r["decisions_per_s"] for p, r in prow.items()}
                   for k, m in med.items()},
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return result
