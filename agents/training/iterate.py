"""Expert iteration: a network learns from the search it guides, step after step (issue #34).

One **step** of the loop, from the current network ``net_k``:

1. **Positions** (:func:`collect_labels`). ``net_k`` (greedy) plays ``deals`` seeded first deals; deal
   ``i`` is self-play or, cycling through ``opponents``, ``net_k`` holds one team (team ``i % 2``) against a
   goal opponent (``random``, ``heuristic``, a search …). Every decision of ``net_k``'s seats with more
   than one legal action is searched by the guided search: :class:`agents.players.pimc.PIMCPolicy` with ``net_k``
   as prior (its ``top_k`` most probable actions; ``top_k: 0``, the default, searches **every** legal
   action) and as rollout policy (or ``rollout: random``/``heuristic``), ``worlds`` sampled worlds, uniform
   or policy-weighted (``weights``), its rollouts cut after ``depth`` steps and valued by ``net_k``'s critic
   (``depth: 0``, the default: played to the deal's end). A position keeps the seat's observation, mask, the
   game state (for a central critic), which actions were searched and the search's value of each (``q``, game
   points), its value of the position (the best searched action's value), the deal's outcome for the seat's
   side (as ``net_k`` and the opponent played it out), and ``net_k``'s own probabilities there (the anchor).
2. **Fit** (:func:`fit_labels`): from ``net_k``, Adam on the cross-entropy of the policy to the target
   (:func:`target_probs`: ``target: softmax``, the softmax of the searched actions' values at
   ``temperature`` points; ``target: improve``, ``net_k``'s probabilities times ``exp(q / temperature)``
   over the searched actions, which keep the mass ``net_k`` gave them), plus ``value_coef`` times the squared error
   of the value head to the position's value (:func:`value_targets`: the search's value for a critic of the
   seat's observation, the deal's outcome for a central critic; divided by the game's ``reward_scale``),
   plus ``kl_coef`` times the KL divergence from ``net_k``'s probabilities (the anchor: the new network
   moves where the search is sure and stays where it is not).
3. **Match** (:func:`agents.evaluation.evaluate.duplicate_eval`): the candidate against ``net_k`` on ``match_deals``
   duplicate deals; it is **promoted** (``net_{k+1}`` = candidate) only if its mean margin is above 0 at
   one-sided 95% (mean − 1.645·sd/√n > 0); otherwise ``net_{k+1} = net_k`` and the next step collects
   new positions from it (another seed).

**The run directory** (``run_dir``) holds every step: ``run.json`` (the configuration; another run's
directory is refused), ``net_0.pt`` (the start), and per step ``step_<k>/positions.npz`` (plain arrays
and a JSON header, no pickle; :func:`agents.training.distill.write_arrays`), ``step_<k>/candidate.pt``,
``step_<k>/match.json`` and ``net_<k+1>.pt`` (the shipped policy format, whole-content checksum,
``agents.players.policy.save_checkpoint``). Run again, the loop goes on after the last finished part (a step's
positions, its candidate, its match), checking each file it reads (checksums, the network that collected
the positions): an interrupted run ends as the uninterrupted one. Everything is seeded from ``seed``:
deal ``i`` of step ``k`` has its own seeds (the deal, the search, the opponent), so the positions do not
depend on how many processes labelled them.

**Many processes** (``torchrun``): each rank labels the deals ``i ≡ rank (mod world)`` of every step,
rank 0 gathers them (in deal order: the same positions as one process), fits, plays the match and writes;
the others wait and read the promoted network from rank 0. One process needs no torchrun::

    tarot-iterate --config configs/iterate-millone.yaml
    tarot-iterate --config configs/iterate-millone.yaml iterations=5 run_dir=runs/it2 seed=2
    torchrun --standalone --nproc_per_node=8 -m agents.training.iterate --config configs/iterate-millone.yaml
    torchrun --nnodes=4 --nproc_per_node=16 --rdzv_backend=c10d --rdzv_endpoint=HOST:29500 \\
        -m agents.training.iterate --config configs/iterate-millone.yaml   # several machines (a shared run_dir)

More: docs/iterate.md.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..players.policy import NetworkPolicy, Policy, load_network_policy, model_checksum, save_checkpoint
from ..spec import GameSpec, make_spec
from .distill import _observe, anchor_kl, minibatch, read_arrays, write_arrays
from .distributed import Ranks, barrier, broadcast, close_ranks, gather_to_main, init_ranks

SELF = "self"  # the opponents' entry for self-play
ROLLOUTS = ("network", "random", "heuristic")
WEIGHTS = ("uniform", "policy")
TARGETS = ("softmax", "improve")
ONE_SIDED_95 = 1.6448536269514722  # the normal quantile of 0.95
RUN_FORMAT = 1
LABELS_FORMAT = 3  # 2: the searched actions of each position ("searched"); 3: the deal's outcome ("outcome")
LABEL_ARRAYS = {"obs": (np.float32, "O"), "mask": (np.bool_, "A"), "searched": (np.bool_, "A"),
                "state": (np.float32, "S"), "q": (np.float32, "A"), "value": (np.float32, None),
                "outcome": (np.float32, None), "probs": (np.float32, "A"), "deal": (np.int64, None)}


@dataclass
class IterArgs:
    """The loop's settings (a YAML config in ``configs/`` plus ``key=value`` overrides)."""

    game: str = "millone"
    start: str = "ppo"                # the first network: "ppo" (the shipped one) or a checkpoint path
    iterations: int = 3               # steps of the loop
    deals: int = 8                    # first deals a step plays; the decisions of the network's seats are labelled
    opponents: list = field(default_factory=lambda: [SELF, "random", "heuristic"])  # cycled over the deals
    worlds: int = 16                  # sampled worlds per search
    top_k: int = 0                    # actions searched: the network's top_k most probable (0: every legal one)
    rollout: str = "network"          # the search's rollout policy: network (the current one) | random | heuristic
    weights: str = "uniform"          # the search's worlds: uniform | policy (weighted by the network, players/pimc.py)
    depth: int = 0                    # rollout steps before the network's critic values the world (0: to the deal's
                                      # end; rollout: network only; players/pimc.py)
    temperature: float = 100.0        # points: how sharply the policy target follows the values q (see target)
    target: str = "softmax"           # softmax: softmax(q / temperature) over the searched actions; improve: the
                                      # network's p·exp(q / temperature) over them, their mass and the others' kept
    steps: int = 100                  # Adam steps of a fit
    lr: float = 1e-4
    kl_coef: float = 1.0              # weight of the KL anchor to the previous network
    value_coef: float = 0.5           # weight of the value head's squared error (0: the critic is not fitted)
    batch: int = 0                    # positions per Adam step (0: all of them)
    pool: bool = False                # fit on every step's positions since the last promotion, not only this step's
    match_deals: int = 100            # duplicate deals of the promotion match
    seed: int = 0
    run_dir: str = "runs/iterate"
    threads: int = 1                  # torch threads per process
    dist_timeout_s: float = 7200.0    # how long a rank waits for the others (rank 0 fits and plays the match)

    def __post_init__(self):
        _check_args(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FIELDS = typing.get_type_hints(IterArgs)


def _check_types(a: IterArgs) -> None:
    """Every field's type (an int is a float; a bool is neither)."""
    for name, typ in _FIELDS.items():
        v = getattr(a, name)
        ok = (isinstance(v, (int, float)) and not isinstance(v, bool) if typ is float else
              isinstance(v, int) and not isinstance(v, bool) if typ is int else isinstance(v, typ))
        if not ok:
            raise ValueError(f"config key {name!r} must be of type {typ.__name__}, got {type(v).__name__} {v!r}")


def _check_args(a: IterArgs) -> None:
    """Every field's type and range: a ``ValueError`` naming the first wrong one and what would be right."""
    _check_types(a)
    import tarot_env

    if a.game not in tarot_env.ENV_IDS:
        raise ValueError(f"game {a.game!r}: games are {sorted(tarot_env.ENV_IDS)}")
    if a.seed < 0:
        raise ValueError(f"seed must be a whole number >= 0 (got {a.seed})")
    for name in ("iterations", "deals", "worlds", "steps", "match_deals", "threads"):
        if getattr(a, name) < 1:
            raise ValueError(f"{name} must be at least 1 (got {getattr(a, name)})")
    for name in ("lr", "temperature", "dist_timeout_s"):
        if not (math.isfinite(getattr(a, name)) and getattr(a, name) > 0):
            raise ValueError(f"{name} must be a finite number > 0 (got {getattr(a, name)})")
    for name in ("kl_coef", "value_coef"):
        if not (math.isfinite(getattr(a, name)) and getattr(a, name) >= 0):
            raise ValueError(f"{name} must be a finite number >= 0 (got {getattr(a, name)})")
    for name, what in (("batch", "all positions"), ("top_k", "every legal action"), ("depth", "to the deal's end")):
        if getattr(a, name) < 0:
            raise ValueError(f"{name} must be 0 ({what}) or a number >= 1 (got {getattr(a, name)})")
    for name, choices in (("rollout", ROLLOUTS), ("weights", WEIGHTS), ("target", TARGETS)):
        if getattr(a, name) not in choices:
            raise ValueError(f"{name} {getattr(a, name)!r}: one of {list(choices)}")
    if a.depth and a.rollout != "network":
        raise ValueError(f"depth {a.depth} values the cut rollouts with the network's critic: rollout must be "
                         f"'network' (got {a.rollout!r}), or depth 0")
    if not a.opponents or not all(isinstance(o, str) and o for o in a.opponents):
        raise ValueError(f"opponents must be a non-empty list of player specs or {SELF!r} (got {a.opponents!r})")


def load_iter_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> IterArgs:
    """``IterArgs`` from a YAML file plus ``key=value`` overrides (values parsed as YAML)."""
    import yaml

    d: dict[str, Any] = {}
    if path is not None:
        if not Path(path).is_file():
            raise ValueError(f"config file {str(path)!r} does not exist (e.g. configs/iterate-millone.yaml)")
        with open(path) as f:
            d = yaml.safe_load(f) or {}
        if not isinstance(d, dict):
            raise ValueError(f"config {str(path)!r} must be a YAML mapping of keys to values")
    for item in overrides or []:
        k, eq, v = item.partition("=")
        if not eq:
            raise ValueError(f"override {item!r} must look like key=value")
        d[k.strip()] = yaml.safe_load(v)
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown}; valid keys are {sorted(_FIELDS)}")
    return IterArgs(**d)


# --------------------------------------------------------------------------------------------------
# 1. positions labelled by the search
# --------------------------------------------------------------------------------------------------
def make_search(game: str, net: NetworkPolicy, args: IterArgs) -> Policy:
    """The guided search of a step: ``net`` as prior over its ``top_k`` most probable actions (0: every
    action) and, with ``rollout: network``, as rollout policy; ``weights`` as configured."""
    from ..players.pimc import PIMCPolicy

    rollout = net if args.rollout == "network" else args.rollout
    top_k = args.top_k or net.model.pi.out_features
    return PIMCPolicy(game, worlds=args.worlds, rollout=rollout, prior=net, top_k=top_k, seed=0, weights=args.weights,
                      depth=args.depth)


def deal_seeds(seed: int, step: int, deal: int) -> np.random.SeedSequence:
    """The seeds of deal ``deal`` of step ``step`` (the deal, the search, the opponent): its own, so that the
    positions do not depend on which process labels which deal."""
    return np.random.SeedSequence([seed, step, 0, deal])


def match_seed(seed: int, step: int) -> int:
    """The seed of step ``step``'s promotion match: a stream of its own, apart from the positions' deals."""
    return int(np.random.SeedSequence([seed, step, 1]).generate_state(1)[0])


def reseed(player: Policy, seq: np.random.SeedSequence) -> None:
    """Start ``player``'s random streams anew from ``seq`` (a search, its rollout policy, a random
    baseline, a sampling network): a deal's labels then depend on the deal's seeds alone."""
    a, b = seq.spawn(2)
    if isinstance(getattr(player, "rng", None), np.random.Generator):
        player.rng = np.random.default_rng(a)
    if isinstance(getattr(player, "gen", None), torch.Generator):
        player.gen.manual_seed(int(a.generate_state(1)[0]))
    rollout = getattr(player, "rollout", None)
    if isinstance(rollout, Policy) and rollout is not player:
        reseed(rollout, b)


def label_deal(spec: GameSpec, net: NetworkPolicy, search: Policy, opponent: Policy | None, deal: int,
               seq: np.random.SeedSequence) -> dict[str, list]:
    """The labelled positions of one first deal (module docstring, step 1): ``net`` plays every seat, or
    with ``opponent`` only team ``deal % 2``; each of ``net``'s decisions with a choice is searched."""
    s_deal, s_search, s_opp = seq.spawn(3)
    reseed(search, s_search)
    if opponent is not None:
        reseed(opponent, s_opp)
    g = spec.new_game(int(s_deal.generate_state(1, np.uint64)[0] >> np.uint64(2)))
    out: dict[str, list] = {k: [] for k in LABEL_ARRAYS if k != "outcome"}
    sides = []  # each position's side, for its outcome once the deal has ended
    A = spec.num_actions
    while not g.history:
        if opponent is not None and spec.team_of[g.current] != deal % 2:
            g.apply_unchecked(int(opponent.act_games([g])[0]))
            continue
        obs, mask = _observe([g], spec.obs_size, A)
        if mask[0].sum() > 1:
            values = search.evaluate(g)
            q = np.zeros(A, dtype=np.float32)
            q[list(values)] = list(values.values())
            searched = np.zeros(A, dtype=bool)
            searched[list(values)] = True
            row = {"obs": obs[0], "mask": mask[0], "searched": searched, "state": g.state_vector(), "q": q,
                   "value": np.float32(max(values.values())), "probs": net.probs(obs, mask)[0].astype(np.float32),
                   "deal": deal}
            for k, v in row.items():
                out[k].append(v)
            sides.append(spec.team_of[g.current])
        g.apply_unchecked(int(net.act_batch(obs, mask)[0]))
    scores = g.history[0]["scores"]
    out["outcome"] = [np.float32(scores[t] - scores[1 - t]) for t in sides]
    return out


def collect_labels(spec: GameSpec, net: NetworkPolicy, args: IterArgs, step: int, ranks: Ranks | None = None,
                   players: dict | None = None) -> dict[str, np.ndarray] | None:
    """Step 1 for this process's share of the deals (``i ≡ rank (mod world)``), gathered on rank 0 in deal
    order; returns the arrays of :data:`LABEL_ARRAYS` on rank 0 (None on the other ranks)."""
    ranks = ranks or Ranks()
    search = make_search(spec.name, net, args)
    players = players if players is not None else opponents(spec.name, args.opponents, args.seed)
    mine: dict[str, list] = {k: [] for k in LABEL_ARRAYS}
    for deal in range(ranks.rank, args.deals, ranks.world):
        opp = players[args.opponents[deal % len(args.opponents)]]
        got = label_deal(spec, net, search, opp, deal, deal_seeds(args.seed, step, deal))
        for k in mine:
            mine[k] += got[k]
    parts = gather_to_main(ranks, mine)
    if parts is None:
        return None
    return _joined(parts, spec)


def _joined(parts: list[dict[str, list]], spec: GameSpec) -> dict[str, np.ndarray]:
    """The ranks' positions as arrays, in deal order (each rank's are in deal order already)."""
    size = {"O": spec.obs_size, "A": spec.num_actions, "S": spec.state_size}
    out = {}
    for k, (dtype, width) in LABEL_ARRAYS.items():
        rows = [x for p in parts for x in p[k]]
        out[k] = np.array(rows, dtype=dtype).reshape(-1, size[width]) if width else np.array(rows, dtype=dtype)
    order = np.argsort(out["deal"], kind="stable")
    return {k: v[order] for k, v in out.items()}


def opponents(game: str, specs: list[str], seed: int) -> dict[str, Policy | None]:
    """The goal opponents by spec (``"self"``: None, self-play), each built once (reseeded per deal)."""
    from ..players.registry import load_policy

    return {s: None if s == SELF else load_policy(s, game, seed=seed) for s in dict.fromkeys(specs)}


# --------------------------------------------------------------------------------------------------
# 2. the fit
# --------------------------------------------------------------------------------------------------
def target_probs(q: np.ndarray, searched: np.ndarray, temperature: float, probs: np.ndarray | None = None,
                 target: str = "softmax") -> np.ndarray:
    """float32[L, A]: the policy target of each position from the searched actions' values ``q`` (points).

    ``softmax``: the softmax of ``q / temperature`` over the searched actions, 0 elsewhere.
    ``improve``: the network's probabilities ``probs`` times ``exp(q / temperature)`` over the searched
    actions, scaled to the mass the network gave them; every other action keeps the network's probability.
    A high temperature leaves the network as it is, a low one moves the searched actions' mass to the best of
    them (a KL-regularised policy improvement step, as in MPO)."""
    z = np.where(searched, q.astype(np.float64) / temperature, -np.inf)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    if target == "softmax":
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    p = probs.astype(np.float64)
    w = np.where(searched, p * e, 0.0)
    mass = np.where(searched, p, 0.0).sum(axis=1, keepdims=True)
    total = w.sum(axis=1, keepdims=True)
    inside = np.divide(w * mass, total, out=np.zeros_like(w), where=total > 0)
    return np.where(searched, inside, p).astype(np.float32)


def value_targets(net: NetworkPolicy, data: dict[str, np.ndarray]) -> np.ndarray:
    """float32[L]: what the value head is fitted to at each position (points). A critic that reads the seat's
    observation values the seat's information, as the search does: the search's value of the position. A
    central critic reads the full state, every hand, and values that one world; the search's value is an average
    over the worlds the seat cannot tell apart, and a central critic fitted to it forgets the hands it sees, which
    ruins it as the leaf of a cut search (``depth``: -3.3 points a deal in Partita, docs/iterate.md). So a central
    critic is fitted to the deal's outcome from the position, as the network played it: that world's value."""
    return data["outcome"] if net.model.critic_kind == "central" else data["value"]


def fit_labels(net: NetworkPolicy, data: dict[str, np.ndarray], args: IterArgs, scale: float, seed: int) -> dict:
    """Step 2 (module docstring) in place on ``net.model``; returns the losses before and after and the
    share of positions where the network's choice is the search's best action."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = net.model
    obs, mask, state = (torch.as_tensor(data[k]) for k in ("obs", "mask", "state"))
    target = torch.as_tensor(target_probs(data["q"], data["searched"], args.temperature, data["probs"], args.target))
    value = torch.as_tensor(value_targets(net, data) / scale)
    p_old = torch.as_tensor(data["probs"])
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    def losses(j=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        j = slice(None) if j is None else j
        logits, v = model(obs[j], mask[j], state[j])
        ce = -(target[j] * torch.log_softmax(logits, dim=1)).masked_fill(~mask[j], 0.0).sum(1).mean()
        return ce, ((v - value[j]) ** 2).mean(), anchor_kl(model, obs[j], mask[j], p_old[j])

    model.train()
    with torch.no_grad():
        before = losses()
    for _ in range(args.steps):
        ce, mse, kl = losses(minibatch(len(obs), args.batch or None, gen))
        opt.zero_grad()
        (ce + args.value_coef * mse + args.kl_coef * kl).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = losses()
        best = torch.as_tensor(np.where(data["searched"], data["q"], -np.inf).argmax(1))
        agree = float((model.masked_logits(obs, mask).argmax(1) == best).float().mean())
        agree0 = float((torch.as_tensor(data["probs"]).argmax(1) == best).float().mean())
    names = ("ce", "value_mse", "kl")
    return {**{f"{n}_before": float(x) for n, x in zip(names, before)},
            **{f"{n}_after": float(x) for n, x in zip(names, after)},
            "agreement_before": agree0, "agreement_after": agree}


# --------------------------------------------------------------------------------------------------
# 3. the match
# --------------------------------------------------------------------------------------------------
def promotion_match(spec: GameSpec, candidate: NetworkPolicy, previous: NetworkPolicy, deals: int,
                    seed: int) -> dict:
    """The candidate against the previous network on ``deals`` duplicate deals; ``promoted`` when the mean
    margin is above 0 at one-sided 95% (its lower bound ``mean − 1.645·sd/√n`` > 0)."""
    from ..evaluation.evaluate import duplicate_eval

    r = duplicate_eval(spec, candidate, previous, deals, seed)
    sd = float(r.margins.std(ddof=1)) if deals > 1 else 0.0
    lower = r.mean_margin - ONE_SIDED_95 * sd / math.sqrt(deals)
    return {**r.as_dict(), "lower_one_sided_95": lower, "promoted": bool(lower > 0), "seed": seed}


# --------------------------------------------------------------------------------------------------
# the run directory
# --------------------------------------------------------------------------------------------------
def net_path(run: Path, k: int) -> Path:
    return run / f"net_{k}.pt"


def step_dir(run: Path, k: int) -> Path:
    return run / f"step_{k}"


def open_run_dir(args: IterArgs, spec: GameSpec) -> Path:
    """The run directory, made (with ``run.json`` and ``net_0.pt``) or checked: a directory holding another
    run's ``run.json`` (another configuration, other than ``iterations``, which may grow) is refused, and
    so is a non-empty directory without one."""
    run = Path(args.run_dir)
    cfg = {k: v for k, v in args.to_dict().items() if k not in ("iterations", "threads", "dist_timeout_s")}
    if not cfg["depth"]:  # (added later: a run of before, without it, goes on)
        del cfg["depth"]
    want = {"format": RUN_FORMAT, "env_id": spec.env_id, "config": cfg}
    meta = run / "run.json"
    if meta.is_file():
        try:
            have = json.loads(meta.read_text())
        except ValueError as e:
            raise ValueError(f"{meta}: not a run description ({e})") from None
        if have != want:
            old = have.get("config", {}) if isinstance(have, dict) else {}
            diff = sorted(k for k in set(cfg) | set(old) if old.get(k) != cfg.get(k))
            raise ValueError(f"{run} holds another run (its run.json differs in {diff or ['format/env_id']}); "
                             f"choose another run_dir, or the same settings to go on with it")
        return run
    if run.exists() and any(run.iterdir()):
        raise ValueError(f"{run} is not empty and holds no run.json: not a run directory of tarot-iterate; "
                         f"choose another run_dir")
    run.mkdir(parents=True, exist_ok=True)
    net = load_start(args.start, spec.name)
    meta_k = {k: v for k, v in net.meta.items() if k != "checksum"}
    meta_k["iterated"] = {"from": args.start, "step": 0}
    save_checkpoint(net_path(run, 0), {"meta": meta_k, "model": net.model.state_dict()})
    tmp = meta.with_name("run.json.tmp")
    tmp.write_text(json.dumps(want, indent=1, sort_keys=True))
    tmp.replace(meta)
    return run


def load_start(spec_or_path: str, game: str) -> NetworkPolicy:
    """The start network: ``"ppo"`` or a checkpoint path (a ``ValueError`` for anything else)."""
    from ..players.registry import load_policy

    net = load_policy(spec_or_path, game)
    if not isinstance(net, NetworkPolicy):
        raise ValueError(f"start must be a network (\"ppo\" or a checkpoint path), not {spec_or_path!r}")
    return net


def save_labels(path: Path, data: dict[str, np.ndarray], spec: GameSpec, net: NetworkPolicy, args: IterArgs,
                step: int, seconds: tuple[float, float], world: int) -> None:
    """Write a step's positions (:func:`agents.training.distill.write_arrays`); the header names the network that
    collected them, the search's settings, and the wall and CPU seconds (of rank 0) the labelling took."""
    header = {"format": LABELS_FORMAT, "env_id": spec.env_id,
              "student_checksum": model_checksum(net.model.state_dict()),
              "step": step, "seed": args.seed, "deals": args.deals, "worlds": args.worlds, "top_k": args.top_k,
              "rollout": args.rollout, "depth": args.depth,
              "weights": args.weights, "opponents": list(args.opponents), "seconds": round(seconds[0], 2),
              "cpu_seconds": round(seconds[1], 2),
              "processes": world}
    write_arrays(path, data, header)


def load_labels(path: Path, spec: GameSpec, net: NetworkPolicy) -> tuple[dict[str, np.ndarray], dict]:
    """A step's positions, every part checked (``agents.training.distill.read_arrays``) and the values inside the
    legal masks."""
    data, header = read_arrays(path, LABEL_ARRAYS, spec, model_checksum(net.model.state_dict()), LABELS_FORMAT)
    if (data["q"][~data["mask"]] != 0).any() or (data["probs"][~data["mask"]] != 0).any():
        raise ValueError(f"{path}: an action value or probability outside its position's legal mask")
    if (data["searched"] & ~data["mask"]).any() or (data["q"][~data["searched"]] != 0).any():
        raise ValueError(f"{path}: a searched action outside its position's legal mask, or a value of an "
                         f"action not searched")
    if not data["searched"].any(axis=1).all():
        raise ValueError(f"{path}: a position with no searched action")
    return data, header


# --------------------------------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------------------------------
def iterate(args: IterArgs, ranks: Ranks | None = None, log=print) -> list[dict]:
    """The loop (module docstring); returns each step's record (``step_<k>/match.json``) on rank 0."""
    ranks = ranks or Ranks()
    torch.set_num_threads(args.threads)
    spec = make_spec(args.game)
    run = Path(args.run_dir)
    error = None
    if ranks.main:
        try:
            open_run_dir(args, spec)
        except ValueError as e:
            error = str(e)
    error = broadcast(ranks, error)  # every rank stops on rank 0's refusal, none waits for it
    if error:
        raise ValueError(error)
    players = opponents(spec.name, args.opponents, args.seed)
    records = []
    for k in range(args.iterations):
        done = (step_dir(run, k) / "match.json").is_file() and net_path(run, k + 1).is_file()
        if broadcast(ranks, done if ranks.main else None):
            if ranks.main:
                records.append(json.loads((step_dir(run, k) / "match.json").read_text()))
            continue
        net = shared_network(ranks, net_path(run, k), spec.name)
        rec = run_step(args, spec, run, k, net, ranks, players, log)
        barrier(ranks)
        if rec is not None:
            records.append(rec)
    return records


def shared_network(ranks: Ranks, path: Path, game: str) -> NetworkPolicy:
    """The network of ``path``, read (and checked) by rank 0 and sent to the other ranks, so that the
    machines of a run need no shared disk."""
    net = load_network_policy(path, game) if ranks.main else None
    if ranks.world == 1:
        return net
    meta, weights = broadcast(ranks, (net.meta, net.model.state_dict()) if ranks.main else None)
    if net is None:
        from ..players.policy import build_model

        model = build_model(meta)
        model.load_state_dict(weights)
        net = NetworkPolicy(model, meta=meta)
    return net


def pooled_labels(run: Path, k: int, spec: GameSpec, net: NetworkPolicy, data: dict[str, np.ndarray]
                  ) -> dict[str, np.ndarray]:
    """Step ``k``'s positions and those of the steps before it that ``net`` collected too (back to the
    last promotion: a step that promoted nothing left the same network), oldest first."""
    parts = [data]
    for j in range(k - 1, -1, -1):
        if json.loads((step_dir(run, j) / "match.json").read_text())["match"]["promoted"]:
            break
        parts.insert(0, load_labels(step_dir(run, j) / "positions.npz", spec, net)[0])
    return {key: np.concatenate([p[key] for p in parts]) for key in LABEL_ARRAYS}


def run_step(args: IterArgs, spec: GameSpec, run: Path, k: int, net: NetworkPolicy, ranks: Ranks, players: dict,
             log) -> dict | None:
    """Step ``k`` from ``net`` (``net_<k>.pt``): positions, candidate, match, ``net_<k+1>.pt``; each part
    that a previous run finished is read back (checked) instead of done again. Rank 0 returns the record."""
    d = step_dir(run, k)
    labels = d / "positions.npz"
    have = broadcast(ranks, labels.is_file() if ranks.main else None)
    if not have:
        t0, c0 = time.perf_counter(), time.process_time()
        data = collect_labels(spec, net, args, k, ranks, players)
        if ranks.main:
            d.mkdir(parents=True, exist_ok=True)
            save_labels(labels, data, spec, net, args, k, (time.perf_counter() - t0, time.process_time() - c0),
                        ranks.world)
    if not ranks.main:
        return None
    data, header = load_labels(labels, spec, net)
    log(f"step {k}: {len(data['obs'])} positions from {args.deals} deals in {header['seconds']:.0f} s "
        f"({header['processes']} process(es))")
    fit_data = pooled_labels(run, k, spec, net, data) if args.pool else data
    cand_path = d / "candidate.pt"
    if cand_path.is_file():
        cand = load_network_policy(cand_path, spec.name)
        fit = cand.meta["iterated"]["fit"]
    else:
        cand = load_network_policy(net_path(run, k), spec.name)
        t0 = time.perf_counter()
        fit = fit_labels(cand, fit_data, args, float(spec.env_config.reward_scale), args.seed + k)
        fit["seconds"] = round(time.perf_counter() - t0, 2)
        fit["positions"] = len(fit_data["obs"])
        meta = {key: v for key, v in cand.meta.items() if key != "checksum"}
        meta["iterated"] = {"from": str(net_path(run, k)), "step": k + 1, "run": args.to_dict(), "fit": fit,
                            "positions": len(data["obs"])}
        save_checkpoint(cand_path, {"meta": meta, "model": cand.model.state_dict()})
    t0 = time.perf_counter()
    match = promotion_match(spec, cand, net, args.match_deals, match_seed(args.seed, k))
    match["seconds"] = round(time.perf_counter() - t0, 2)
    rec = {"step": k, "positions": len(data["obs"]), "label_seconds": header["seconds"],
           "label_cpu_seconds": header["cpu_seconds"], "fit_seconds": fit.get("seconds"),
           "processes": header["processes"], "fit": fit, "match": match}
    nxt = cand if match["promoted"] else net
    meta = {key: v for key, v in nxt.meta.items() if key != "checksum"}
    save_checkpoint(net_path(run, k + 1), {"meta": meta, "model": nxt.model.state_dict()})
    (d / "match.json").write_text(json.dumps(rec, indent=1, sort_keys=True))
    log(f"step {k}: agreement {fit['agreement_before']:.3f} -> {fit['agreement_after']:.3f}; match "
        f"{match['mean_margin']:+.2f} ± {match['ci95']:.2f} points/deal, won {100 * match['win_share']:.1f}% "
        f"-> {'promoted' if match['promoted'] else 'kept the previous network'}")
    return rec


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``python -m agents.training.iterate`` (also under torchrun) and the ``tarot-iterate`` command."""
    from ..parsers import iterate_parser

    return run_cli(iterate_parser("python -m agents.training.iterate").parse_args(argv))


def run_cli(ns, prog: str = "tarot-iterate") -> int:
    """Run the loop as the parsed command line says: one process, or this rank of a torchrun."""
    try:
        args = load_iter_config(ns.config, ns.overrides)
        ranks, _ = init_ranks(_DistArgs(args.dist_timeout_s, max(args.deals, 1)))
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        records = iterate(args, ranks, log=(lambda s: print(s, flush=True)) if ranks.main else (lambda s: None))
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    finally:
        close_ranks(ranks)
    if ranks.main:
        promoted = sum(r["match"]["promoted"] for r in records)
        print(f"{len(records)} step(s), {promoted} promoted; the current network: "
              f"{net_path(Path(args.run_dir), len(records))}")
    return 0


@dataclass
class _DistArgs:
    """What ``agents.training.distributed.init_ranks`` reads: labelling runs on the CPU."""

    dist_timeout_s: float
    num_envs: int
    device: str = "cpu"
    amp: bool = False


if __name__ == "__main__":
    from tarot_env.commands import run_command

    raise SystemExit(run_command("python -m agents.training.iterate", main))
