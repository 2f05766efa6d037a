"""Masked PPO self-play for the tarot games (CleanRL-style: one readable file, the ranks' helpers apart).

One policy plays every seat (observations are seat-relative, partners share rewards) and every
decision type (discards, declarations, signals, cards) through one flat action space; illegal
actions get probability zero (masked logits) and the entropy is over the legal actions only.

    python -m agents.training.ppo --config configs/partita.yaml total_decisions=2000000 seed=3
    tarot-train --config configs/partita.yaml --resume          # overrides may follow --resume too

Pieces, top to bottom: ``Args`` (every hyperparameter, documented), ``OpponentPool`` (self-play against
frozen snapshots and fixed policies), the device transfers, ``train(args)``: its loop reads as one
update's steps, each a short function on the run's state (``Run``): ``setup_run`` → ``collect_rollout``
→ ``rollout_batch`` (GAE) → ``ppo_update`` (clipped updates) → ``end_update`` → ``maybe_snapshot`` →
``log_update`` (and ``evaluate``) → ``save_run`` (checkpoint) → ``finish_run``. The torch.distributed
helpers (``Ranks``, ``init_ranks``, the collectives, ``wrap_ddp``) are in ``agents.training.distributed``. The
network (``ActorCritic``) and the masked-distribution maths (``masked``, ``masked_logp_entropy``,
``masked_sample``: the maths the tests check by hand) live in ``agents.players.network``, which the policy side
imports too.

Devices. ``device: auto`` trains on CUDA when torch has it, else on the CPU (``cpu``, ``cuda``,
``cuda:N`` choose). The network and its updates run on the device; the batched engine steps on the
CPU and each step's observations (observation, mask, state packed in one array) cross in one
transfer, the logits and values come back in one; actions are sampled on the CPU with the run's
checkpointed generator, so a run's random streams do not depend on the device. ``amp: true``
computes the network in bfloat16 on CUDA (losses in float32). Checkpoints are written on the CPU: one
written on any device resumes or plays on any other (bit for bit only on the same kind of device,
world size and thread count).

Data-parallel training (``torch.distributed`` with ``DistributedDataParallel``: gloo on the CPU,
NCCL on CUDA; torchrun starts and watches the processes)::

    torchrun --standalone --nproc_per_node=2 -m agents.training.ppo --config configs/partita.yaml
    torchrun --standalone --nproc_per_node=auto -m agents.training.ppo --config configs/partita.yaml  # per core/GPU
    # two machines (run on each, same config; host0 is reachable from both):
    torchrun --nnodes=2 --nproc_per_node=4 --node_rank=<0|1> --rdzv_backend=c10d \
             --rdzv_endpoint=host0:29500 --rdzv_id=partita1 --rdzv_conf join_timeout=120 \
             -m agents.training.ppo --config configs/partita.yaml

The ``num_envs`` games of a rollout are split between the ranks (rank r plays its own slice with its
own seeds: rank 0 uses the run's seeds, so one process is the run it always was); each rank updates
on its own transitions and the gradients are averaged, so the weights stay identical on every rank
(``check_sync: true`` verifies it after every update). ``total_decisions``, ``num_envs`` and
``num_minibatches`` keep their meaning (a minibatch is the ranks' slices together). The opponent
pool is one pool: its snapshots and its win counts (summed over the ranks after each rollout) are the
same on every rank, each rank draws opponents with its own stream. Rank 0 alone logs (TensorBoard,
``progress.csv``: its own slice's statistics, the run's decisions/s), evaluates and writes the
checkpoints; the checkpoint holds every rank's random states and games in progress, and the world size:
``--resume`` continues exactly with the same number of ranks and refuses another. ``threads: 0``
(the default) gives each rank ``cores // ranks per machine`` torch threads (idle ones sleep:
``OMP_WAIT_POLICY=PASSIVE`` unless set). A rank that cannot reach the others within
``dist_timeout_s`` stops with a one-line error. More: docs/training-distributed.md.
"""
from __future__ import annotations

import contextlib
import copy
import csv
import dataclasses
import itertools
import json
import math
import os
import random
import re
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Idle OpenMP threads sleep rather than spin. libgomp reads this when torch loads it, so it is set before
# ``import torch`` (unless the user chose a policy): with other processes on the same cores, spinning
# threads made a 2-thread run 8x slower (4,351 vs 553 decisions/s measured on 2 busy cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
import torch.nn as nn

import tarot_env

from ..evaluation.evaluate import duplicate_eval
from ..players.network import ActorCritic, masked_logp_entropy, masked_sample
from ..players.policy import NetworkPolicy, Policy, RandomPolicy, load_checkpoint, save_checkpoint
from ..players.registry import load_policy as load_player
from ..players.sparse_input import SparseRows, weights_frozen
from ..spec import make_spec
from .distributed import (  # the names of the rank helpers stay importable from agents.training.ppo
    Ranks,
    all_gather,
    all_sum,
    barrier,
    broadcast,
    check_in_sync,
    close_ranks,
    default_threads,
    gather_to_main,
    init_ranks,
    rank_seed,
    rank_share,
    resolve_device as resolve_device,
    weights_digest as weights_digest,
    wrap_ddp,
)
from .rollout import SELF, Collector, VecCollector, compute_gae, vec_available


# ==================================================================================================
# Hyperparameters
# ==================================================================================================
@dataclass
class Args:
    # --- the game -----------------------------------------------------------------------------
    game: str = "partita"
    """which game: a key of ``tarot_env.GAMES``"""
    game_options: dict = field(default_factory=dict)
    """rules and env options, as for ``pettingzoo.make`` (e.g. ``{deals_per_game: 4, reward_scale: 80}``)"""
    # --- run ----------------------------------------------------------------------------------
    seed: int = 1
    """one seed reproduces the run (on the same kind of device, with the same threads and ranks)"""
    total_decisions: int = 5_000_000
    """stop after this many decisions (all seats, learner and opponents)"""
    time_limit_s: float = 0.0
    """also stop after this many seconds of training (0 = no limit; a time limit is not reproducible)"""
    threads: int = 0
    """torch intra-op threads per rank (0 = the machine's cores // the ranks on this machine)"""
    device: str = "auto"
    """where the network trains: 'auto' (CUDA when available, else CPU), 'cpu', 'cuda', 'cuda:N'"""
    amp: bool = False
    """mixed precision on CUDA (the network in bfloat16, losses in float32)"""
    dist_timeout_s: float = 300.0
    """several ranks: seconds to wait for the others (joining, and any collective) before an error"""
    check_sync: bool = False
    """several ranks: compare a checksum of every rank's weights after each update (debugging)"""
    run_name: str = ""
    """name of the run directory under ``log_dir`` and ``save_dir`` (default ``<game>_s<seed>``)"""
    log_dir: str = "runs"
    """TensorBoard logs and ``progress.csv`` go to ``<log_dir>/<run_name>``"""
    save_dir: str = "checkpoints"
    """checkpoints go to ``<save_dir>/<run_name>/last.pt`` (and ``final.pt`` at the end)"""
    checkpoint_every: int = 20
    """updates between checkpoints (0 = only the final one)"""
    progress: bool = True
    """show a tqdm progress bar (decisions/s, current win rate)"""
    overwrite: bool = False
    """start afresh even if the run directory already holds a checkpoint (else that is an error)"""
    # --- rollouts -----------------------------------------------------------------------------
    num_envs: int = 128
    """games played side by side (the learner's forward pass is batched over them)"""
    num_steps: int = 64
    """decisions per game per rollout (a rollout is num_envs * num_steps decisions)"""
    backend: str = "auto"
    """'vec': the batched numpy engine ``tarot_env.make_vec``; 'rules': one rules object per game;
    'auto': 'vec' where the game has a batched engine, else 'rules' (same observations and rewards)"""
    # --- PPO ----------------------------------------------------------------------------------
    learning_rate: float = 3e-4
    """Adam step size"""
    anneal_lr: bool = False
    """decay the learning rate linearly to 0 over total_decisions"""
    gamma: float = 1.0
    """discount per decision of the same seat (1: rewards are deal scores, episodes are finite)"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    win_bonus: float = 0.0
    """added to every nonzero reward times its sign (a deal won +win_bonus, lost −win_bonus): with
    ``reward="deal"`` the learner is paid for winning a deal, not only for its margin (0 = the margin alone)"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 2
    """passes over each rollout"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO ratio clip"""
    clip_vloss: bool = True
    """clip the value loss around the old values (same clip_coef)"""
    norm_value: bool = False
    """learn normalised values (running mean/std of the returns)"""
    ent_coef: float = 0.01
    """entropy bonus (entropy over legal actions only)"""
    vf_coef: float = 0.5
    """value-loss weight"""
    max_grad_norm: float = 0.5
    """gradient clipping"""
    target_kl: float = 0.0
    """stop an update's epochs early when the approximate KL exceeds this (0 = never)"""
    # --- network ------------------------------------------------------------------------------
    hidden: list = field(default_factory=lambda: [256, 128])
    """hidden layer sizes (ReLU)"""
    critic: str = "shared"
    """'shared': value head on the actor's trunk; 'separate': own MLP on the observation;
    'central': own MLP on the full state() (training only; the actor never sees it)"""
    # --- self-play and the opponent pool -------------------------------------------------------
    self_play_prob: float = 0.5
    """share of games where the learner holds every seat; the rest are against the pool"""
    pool_size: int = 8
    """frozen snapshots kept (oldest dropped first)"""
    snapshot_every: int = 10
    """updates between snapshots of the learner added to the pool (0 = never)"""
    pool_random: bool = True
    """keep uniform random play in the pool"""
    pool_fixed: list = field(default_factory=list)
    """fixed opponents for the pool: any player spec of agents.players.registry.load_policy (``heuristic``,
    ``ppo``, a checkpoint path of the same game)"""
    init_from: str = ""
    """a policy or checkpoint file (same game, environment version, sizes and network) whose network
    weights start the run instead of a random initialisation; its optimizer, pool and games are not used"""
    pool_rule: str = "prioritised"
    """how opponents are sampled: 'uniform', or 'prioritised' by how often they beat the learner"""
    pool_priority_power: float = 1.0
    """prioritised: weight = (1 - learner's win rate against the opponent) ** power"""
    # --- evaluation ---------------------------------------------------------------------------
    eval_every: int = 10
    """updates between duplicate-deal evaluations against random play (0 = only at the end)"""
    eval_deals: int = 200
    """deals per evaluation (each played twice, seats exchanged)"""
    eval_seed: int = 12345
    """seed of the evaluation deals (the same deals every time)"""
    eval_greedy: bool = True
    """evaluate the greedy policy (most probable legal action) rather than sampling"""

    # --- validation -----------------------------------------------------------------------------
    def __post_init__(self):
        from tarot_env.checks import plain_scalar

        for f in dataclasses.fields(self):
            setattr(self, f.name, plain_scalar(getattr(self, f.name)))  # np.int64(3) is 3, np.bool_ a bool
            _check_type(f.name, getattr(self, f.name), _FIELD_TYPES[f.name])
        choices = {"critic": ("shared", "separate", "central"), "pool_rule": ("uniform", "prioritised"),
                   "backend": ("auto", "vec", "rules")}
        for k, allowed in choices.items():
            if getattr(self, k) not in allowed:
                raise ValueError(f"config key {k!r} is {getattr(self, k)!r}; choose one of {list(allowed)}")
        positive = ("total_decisions", "num_envs", "num_steps", "num_minibatches", "update_epochs",
                    "eval_deals")
        for k in positive:
            if getattr(self, k) < 1:
                raise ValueError(f"config key {k!r} must be at least 1 (got {getattr(self, k)})")
        if self.threads < 0:
            raise ValueError(f"config key 'threads' must be 0 (automatic) or more (got {self.threads})")
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"config key 'device' is {self.device!r}; choose 'auto', 'cpu', 'cuda' or 'cuda:N'")
        if not (math.isfinite(self.win_bonus) and self.win_bonus >= 0):
            raise ValueError(f"config key 'win_bonus' must be a finite number >= 0 (got {self.win_bonus})")
        if self.dist_timeout_s <= 0:
            raise ValueError(f"config key 'dist_timeout_s' must be positive (got {self.dist_timeout_s})")
        if not 0.0 <= self.self_play_prob <= 1.0:
            raise ValueError(f"config key 'self_play_prob' must be in [0, 1] (got {self.self_play_prob})")
        if not self.hidden or not all(isinstance(h, int) and h > 0 for h in self.hidden):
            raise ValueError(f"config key 'hidden' must be a non-empty list of positive ints (got {self.hidden})")
        if self.self_play_prob < 1.0 and not (self.pool_random or self.pool_fixed or self.snapshot_every):
            raise ValueError("the opponent pool would stay empty: set pool_random, pool_fixed or "
                             "snapshot_every, or self_play_prob=1")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Args:
        if not isinstance(d, dict):
            raise ValueError(f"a config must be a mapping of keys to values, not {type(d).__name__}")
        unknown = sorted(set(d) - set(_FIELD_TYPES))
        if unknown:
            raise ValueError(f"unknown config key(s) {unknown}; valid keys are {sorted(_FIELD_TYPES)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FIELD_TYPES = {k: v for k, v in typing.get_type_hints(Args).items()}


def _check_type(name: str, value: Any, typ: type) -> None:
    ok = (isinstance(value, bool) if typ is bool else
          isinstance(value, (int, float)) and not isinstance(value, bool) if typ is float else
          isinstance(value, int) and not isinstance(value, bool) if typ is int else
          isinstance(value, typ))
    if not ok:
        raise ValueError(f"config key {name!r} must be of type {typ.__name__}, "
                         f"got {type(value).__name__} {value!r}")


CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> Args:
    """``Args`` from a YAML file plus ``key=value`` overrides (values parsed as YAML)."""
    import yaml

    d: dict[str, Any] = {}
    if path is not None:
        if not Path(path).is_file():
            here = Path(path).parent if Path(path).parent.is_dir() else CONFIG_DIR
            found = sorted(str(f) for f in here.glob("*.yaml")) or sorted(str(f) for f in CONFIG_DIR.glob("*.yaml"))
            raise ValueError(f"config file {str(path)!r} does not exist; configs: {', '.join(found) or 'none'}")
        with open(path) as f:
            d = yaml.safe_load(f) or {}
        if not isinstance(d, dict):
            raise ValueError(f"config {str(path)!r} must be a YAML mapping of keys to values")
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key=value")
        k, v = item.split("=", 1)
        d[k.strip()] = yaml.safe_load(v)
    return Args.from_dict(d)


class RunningNorm:
    """Running mean / variance of the returns (for ``norm_value``)."""

    def __init__(self):
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        bm, bv, bc = float(x.mean()), float(x.var()), len(x)
        d, tot = bm - self.mean, self.count + bc
        self.mean += d * bc / tot
        self.var = (self.var * self.count + bv * bc + d * d * self.count * bc / tot) / tot
        self.count = tot

    @property
    def std(self) -> float:
        return math.sqrt(self.var) + 1e-8

    def state_dict(self):
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, d):
        self.mean, self.var, self.count = float(d["mean"]), float(d["var"]), float(d["count"])


# ==================================================================================================
# Opponent pool
# ==================================================================================================
class OpponentPool:
    """Frozen snapshots of the learner, fixed policies and random play, sampled per game.

    ``sample()`` returns ``SELF`` (pure self-play) with probability ``self_play_prob``, else the id
    of an entry chosen uniformly or prioritised by ``(1 - learner's win rate) ** power`` (win rate =
    (wins + 1) / (games + 2) of the learner's finished games against that entry). Ids are stable: a
    snapshot dropped from the pool keeps playing the games it already sits in (``retire``d) until
    they end. With several ranks the entries and their counts are the same on every rank
    (``state_dict``; counts summed by the trainer), the random streams are the rank's own
    (``stream_state``). Snapshots play on the CPU.
    """

    def __init__(self, args: Args, spec, seed: int):
        self.args = args
        self.spec = spec
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.entries: list[dict[str, Any]] = []  # uid, name, kind, wins, games, (snapshot: weights)
        self.retired: list[dict[str, Any]] = []  # dropped snapshots still seated in running games
        self.policies: dict[int, Policy] = {}
        self.next_uid = 0
        if args.pool_random:
            self._add({"name": "random", "kind": "random"}, RandomPolicy(seed + 1))
        for p in args.pool_fixed:
            self._add({"name": f"fixed:{p}", "kind": "fixed", "path": p}, load_player(p, spec.name, greedy=False,
                                                                                     seed=seed + 2))

    def _add(self, entry: dict, policy: Policy) -> None:
        entry.setdefault("wins", 0.0)
        entry.setdefault("games", 0)
        if "uid" not in entry:
            entry["uid"] = self.next_uid
            self.next_uid += 1
        self.entries.append(entry)
        self.policies[entry["uid"]] = policy

    def add_snapshot(self, model: ActorCritic, update: int, in_use: set[int]) -> None:
        """Freeze the learner into the pool (dropping the oldest snapshot beyond ``pool_size``)."""
        weights = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        snaps = [e for e in self.entries if e["kind"] == "snapshot"]
        if len(snaps) >= self.args.pool_size:
            self.entries.remove(snaps[0])
            self.retired.append(snaps[0])
        for e in list(self.retired):  # forget retired snapshots no game sits with any more
            if e["uid"] not in in_use:
                self.retired.remove(e)
                del self.policies[e["uid"]]
        self._add({"name": f"snapshot@{update}", "kind": "snapshot", "weights": weights},
                  self._snapshot_policy(weights))

    def _snapshot_policy(self, weights) -> Policy:
        with torch.random.fork_rng(devices=[]):  # building it must not move the global torch RNG
            net = ActorCritic(self.spec.obs_size, self.spec.num_actions, self.args.hidden, self.args.critic,
                              self.spec.state_size)
        net.load_state_dict(weights)
        pol = NetworkPolicy(net, greedy=False)
        pol.gen = self.gen  # one checkpointed stream for all snapshots
        return pol

    def sample(self) -> int:
        if not self.entries or self.rng.random() < self.args.self_play_prob:
            return SELF
        if self.args.pool_rule == "uniform":
            return self.entries[int(self.rng.integers(len(self.entries)))]["uid"]
        w = np.array([(1.0 - (e["wins"] + 1.0) / (e["games"] + 2.0)) ** self.args.pool_priority_power + 1e-3
                      for e in self.entries])
        return self.entries[int(self.rng.choice(len(self.entries), p=w / w.sum()))]["uid"]

    def act(self, uid: int, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.policies[uid].act_batch(obs, mask)

    def record(self, uid: int, learner_margin: float) -> None:
        for e in self.entries:
            if e["uid"] == uid:
                e["games"] += 1
                e["wins"] += 1.0 if learner_margin > 0 else 0.5 if learner_margin == 0 else 0.0

    def counts(self) -> np.ndarray:
        """``[[wins, games], ...]`` of the entries, in order."""
        return np.array([[e["wins"], e["games"]] for e in self.entries], dtype=np.float64).reshape(-1, 2)

    def set_counts(self, counts: np.ndarray) -> None:
        for e, (w, g) in zip(self.entries, counts):
            e["wins"], e["games"] = float(w), int(g)

    def state_dict(self) -> dict:
        """The entries (the same on every rank)."""
        return {"entries": [dict(e) for e in self.entries], "retired": [dict(e) for e in self.retired],
                "next_uid": self.next_uid}

    def stream_state(self) -> dict:
        """This rank's random streams: opponent draws, snapshots' sampling, random play."""
        rand = [p for p in self.policies.values() if isinstance(p, RandomPolicy)]
        return {"rng": json.dumps(self.rng.bit_generator.state), "gen": self.gen.get_state(),
                "random_rng": [json.dumps(p.rng.bit_generator.state) for p in rand]}

    def load_state_dict(self, d: dict) -> None:
        old = {e["uid"]: (e, self.policies[e["uid"]]) for e in self.entries}
        self.entries, self.retired, self.policies = [], [], {}
        for group, target in ((d["entries"], self.entries), (d["retired"], self.retired)):
            for e in group:
                e = dict(e)
                if e["kind"] == "snapshot":
                    pol = self._snapshot_policy(e["weights"])
                elif e["uid"] in old:
                    pol = old[e["uid"]][1]
                elif e["kind"] == "random":
                    pol = RandomPolicy(self.args.seed + 1)
                else:
                    pol = load_player(e["path"], self.spec.name, greedy=False, seed=self.args.seed + 2)
                target.append(e)
                self.policies[e["uid"]] = pol
        self.next_uid = int(d["next_uid"])

    def load_stream_state(self, d: dict) -> None:
        self.rng.bit_generator.state = json.loads(d["rng"])
        self.gen.set_state(d["gen"])
        rand = [p for p in self.policies.values() if isinstance(p, RandomPolicy)]
        for p, st in zip(rand, d["random_rng"]):
            p.rng.bit_generator.state = json.loads(st)

    def summary(self) -> dict[str, float]:
        return {f"pool/win_rate_vs/{e['name']}": (e["wins"] + 1.0) / (e["games"] + 2.0)
                for e in self.entries if e["kind"] != "snapshot"}


# ==================================================================================================
# Devices: moving a rollout's arrays to the network, minibatches (the ranks: agents/training/distributed.py)
# ==================================================================================================
def to_device(device: torch.device, *arrays: np.ndarray | None) -> list[torch.Tensor | None]:
    """numpy arrays -> tensors on ``device`` (on the CPU: the same memory; elsewhere: ``packed_transfer``)."""
    if device.type == "cpu":
        return [None if a is None else torch.from_numpy(a) for a in arrays]
    return packed_transfer(device, *arrays)


def packed_transfer(device: torch.device, *arrays: np.ndarray | None) -> list[torch.Tensor | None]:
    """The arrays packed side by side into one float32 array, moved in one transfer, split again on
    ``device`` (bool arrays come back as bool, integer ones as int64, float32 ones as float32)."""
    present = [a for a in arrays if a is not None]
    widths = [int(np.prod(a.shape[1:], dtype=np.int64)) for a in present]
    packed = torch.from_numpy(np.concatenate([a.reshape(len(a), -1).astype(np.float32, copy=False)
                                              for a in present], axis=1)).to(device)
    parts = iter(torch.split(packed, widths, dim=1))
    out: list[torch.Tensor | None] = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        t = next(parts).reshape(a.shape)
        out.append(t > 0.5 if a.dtype == np.bool_ else t.round().to(torch.int64) if a.dtype.kind in "iu" else t)
    return out


def minibatch_slices(n: int, k: int) -> list[slice]:
    """``k`` slices of ``n`` shuffled rows: ``ceil(n / k)`` rows each (the last fewer), or as even as
    possible when fewer than k such slices exist (empty ones only when n < k) — every rank makes the
    same number of updates, as DistributedDataParallel requires."""
    mb = max(1, math.ceil(n / k))
    starts = range(0, n, mb)
    if len(starts) == k:
        return [slice(s, min(s + mb, n)) for s in starts]
    edges = [round(i * n / k) for i in range(k + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(edges)]


# ==================================================================================================
# Training
# ==================================================================================================
def run_paths(args: Args) -> tuple[Path, Path]:
    name = args.run_name or f"{args.game}_s{args.seed}"
    return Path(args.log_dir) / name, Path(args.save_dir) / name


RESUME_MAY_CHANGE = ("total_decisions", "time_limit_s", "progress", "checkpoint_every", "device", "amp",
                     "dist_timeout_s", "check_sync")


# Where a run writes comes from the command line (its config and overrides), never from the checkpoint it
# resumes: a copied run resumed elsewhere must not write into the folders of the run it was copied from.
RESUME_WHERE = ("log_dir", "save_dir", "run_name")


def resume_source(args: Args, resume: bool | str) -> Path:
    """The checkpoint a resume reads: ``resume`` as a path (a file, or a folder holding ``last.pt``), or, for
    ``True`` / ``""`` (``--resume`` alone), ``<save_dir>/<run_name>/last.pt`` of the command line."""
    if resume is True or resume == "":
        return run_paths(args)[1] / "last.pt"
    path = Path(resume)
    return path / "last.pt" if path.is_dir() else path


def open_run(args: Args, resume: bool | str, r: Ranks) -> tuple[Args, dict | None]:
    """Rank 0 checks the run directory and reads and verifies the checkpoint to resume; every rank gets
    the same answer (the args to run, the checkpoint) or the same ``ValueError``."""
    err, ck = None, None
    if r.main:
        try:
            ck = read_start(args, resume, r.world)
        except ValueError as e:
            err = str(e)
    err, ck = broadcast(r, (err, ck))
    if err:
        raise ValueError(err)
    if ck is None:
        return args, None
    saved = Args.from_dict(ck["meta"]["config"])
    keep = (*RESUME_MAY_CHANGE, *RESUME_WHERE)
    changed = {k for k in _FIELD_TYPES if getattr(saved, k) != getattr(args, k)}
    changed -= {*keep, "overwrite", *(["threads"] if args.threads == 0 else [])}
    log_dir, ck_dir = run_paths(args)
    if r.main:
        if changed:
            print(f"resume: keeping the checkpoint's values of {sorted(changed)}")
        print(f"resume: from {str(resume_source(args, resume))!r}; writing checkpoints to {str(ck_dir)!r} "
              f"and logs to {str(log_dir)!r}")
    where = {k: getattr(args, k) for k in keep} | {"run_name": ck_dir.name}
    return dataclasses.replace(saved, **where), ck


def read_start(args: Args, resume: bool | str, world: int) -> dict | None:
    """The verified checkpoint to resume (None for a fresh run), after checking that the run may write
    where the command line says; a ``ValueError`` says what is wrong and what would do."""
    log_dir, ck_dir = run_paths(args)
    if not (resume is True or isinstance(resume, (str, os.PathLike))):  # a fresh run
        if (ck_dir / "last.pt").exists() and not args.overwrite:
            raise ValueError(f"run {str(ck_dir)!r} already has a checkpoint: pass --resume to "
                             "continue it, overwrite=true to start it again, or another run_name")
        return None
    src = resume_source(args, resume)
    ck = load_checkpoint(src, args.game)
    check_resumable(ck, src, world)
    check_destination(Args.from_dict(ck["meta"]["config"]), src, log_dir, ck_dir, args.overwrite)
    return ck


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def check_destination(saved: Args, src: Path, log_dir: Path, ck_dir: Path, overwrite: bool) -> None:
    """A resume from ``src`` writing to ``log_dir`` and ``ck_dir`` overwrites no other run: not another
    run's checkpoint (unless ``overwrite``), and never, for a copy of a run, the folders of the original."""
    if not _same(src.parent, ck_dir) and (ck_dir / "last.pt").exists() and not overwrite:
        raise ValueError(f"--resume reads {str(src)!r}, but this command line writes to {str(ck_dir)!r}, which "
                         "holds another run's checkpoint: name a new folder (save_dir=..., run_name=...) or "
                         "pass overwrite=true")
    orig_log, orig_ck = run_paths(saved)
    if _same(src.parent, orig_ck) or not orig_ck.exists():
        return  # the run itself (or a run moved away from its first folder)
    clash = [str(d) for d, o in ((ck_dir, orig_ck), (log_dir, orig_log)) if _same(d, o)]
    if clash:
        raise ValueError(f"{str(src)!r} is a copy of the run in {str(orig_ck)!r} (logs {str(orig_log)!r}); "
                         f"resumed with this command line it would write into that run's folders {clash}: "
                         "give the copy its own (save_dir=..., log_dir=... or run_name=...)")


def check_resumable(ck: dict, path: Path, world: int) -> None:
    """What ``--resume`` needs beyond a verified file: format 2, sane counters, a valid config, the same
    number of ranks."""
    meta = ck["meta"]
    if ck["format_version"] < 2:
        raise ValueError(f"checkpoint {str(path)!r} has format version {ck['format_version']}, whose checksum "
                         "covers only the weights; it can be played (load_network_policy) but not resumed")
    for key in ("update", "step"):
        if not isinstance(meta[key], int) or isinstance(meta[key], bool) or meta[key] < 0:
            raise ValueError(f"checkpoint {str(path)!r} has meta.{key}={meta[key]!r}; "
                             "a count of at least 0 was expected")
    Args.from_dict(meta["config"])
    saved_world = meta.get("world_size")
    ranks = ck.get("ranks")
    if not isinstance(ranks, list) or len(ranks) != saved_world:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: world size {saved_world!r} but "
                         f"{len(ranks) if isinstance(ranks, list) else 'no'} rank states")
    if saved_world != world:
        raise ValueError(f"checkpoint {str(path)!r} was written by a run of {saved_world} rank(s) and continues "
                         f"exactly only with {saved_world} (this run has {world}): resume with "
                         f"torchrun --nproc_per_node={saved_world} (or, for 1, plain tarot-train), or start a "
                         "new run from its weights")


def init_weights(model: nn.Module, args: Args) -> None:
    """``init_from``: the network weights of a policy or checkpoint file of the same game, environment
    version (``load_checkpoint`` refuses another), sizes and network shape; nothing else of it is used.

    A file whose network is **narrower** (the same number of hidden layers and critic, no layer wider
    than this run's) starts a wider run computing exactly its function: its weights fill the first rows
    and columns of each layer; each new unit keeps its fresh random incoming weights and gets zero
    outgoing weights, so at the start it changes no output, and it learns from the first update on
    (:func:`widen_state`)."""
    ck = load_checkpoint(args.init_from, args.game)
    meta = ck["meta"]
    want = {"hidden": list(args.hidden), "critic": args.critic}
    have = {"hidden": list(meta["config"]["hidden"]), "critic": meta["config"]["critic"]}
    narrower = (have["critic"] == want["critic"] and len(have["hidden"]) == len(want["hidden"])
                and all(h <= w for h, w in zip(have["hidden"], want["hidden"])))
    if not narrower:
        raise ValueError(f"init_from {args.init_from!r} has the network {have}, but this run asks for {want} "
                         "(a file's network may only be narrower: as many hidden layers, each no wider, "
                         "the same critic)")
    try:
        state = ck["model"] if have == want else widen_state(ck["model"], model.state_dict())
        model.load_state_dict(state)
    except (RuntimeError, ValueError) as e:
        raise ValueError(f"init_from {args.init_from!r} does not fit this run's network: {e}") from None


def widen_state(small: dict[str, torch.Tensor], big: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``big`` (a freshly initialised state dict of the wider network) with ``small``'s weights in the
    first rows and columns of every tensor and zeros in the columns that read the new hidden units: the
    wider network computes exactly what ``small`` computes. The first layer's inputs (the observation or
    state) and the last layers' outputs (logits, value) have the same size in both."""
    if set(small) != set(big):
        raise ValueError(f"the two networks have other layers: {sorted(set(small) ^ set(big))}")
    out = {}
    for k, b in big.items():
        a = small[k]
        if a.dim() != b.dim() or any(x > y for x, y in zip(a.shape, b.shape)):
            raise ValueError(f"layer {k}: {tuple(a.shape)} does not fit into {tuple(b.shape)}")
        w = b.clone()
        if w.dim() == 2:
            w[:, a.shape[1]:] = 0.0  # what reads the new units of the layer below: nothing at the start
            w[:a.shape[0], :a.shape[1]] = a
        else:
            w[:a.shape[0]] = a
        out[k] = w
    return out


def train(args: Args, resume: bool | str = False, stop_after_updates: int | None = None) -> dict[str, Any]:
    """Train with PPO self-play; returns the last metrics (and the checkpoint path under "checkpoint").

    ``resume`` continues from ``<save_dir>/<run_name>/last.pt`` (``True``) or from the checkpoint at the
    path ``resume`` exactly where it stopped (the checkpoint's config is used; only the keys of
    ``RESUME_MAY_CHANGE`` may change); it writes to the folders of ``args`` (``RESUME_WHERE``), and refuses
    to overwrite another run or, for a copied run, the original's folders (:func:`check_destination`).
    ``stop_after_updates`` simulates a killed run (tests): stop after that many updates, right after the
    checkpoint of that update. Started by torchrun, this process is one rank of a data-parallel run (module docstring).
    """
    ranks, device = init_ranks(args)
    try:
        out = _train(args, resume, stop_after_updates, ranks, device)
        if ranks.owns_group:
            # every rank reaches the end before any tears the group down: a rank that destroys gloo's
            # group while rank 0 still evaluates and writes its files can abort at exit (SIGABRT)
            barrier(ranks)
        return out
    finally:
        close_ranks(ranks)


def _train(args: Args, resume: bool | str, stop_after_updates: int | None, ranks: Ranks,
           device: torch.device) -> dict[str, Any]:
    """The loop, in the order of one update: collect → advantages → clipped updates → snapshot →
    evaluate and log → checkpoint."""
    args, ck = open_run(args, resume, ranks)
    run = setup_run(args, ck, ranks, device)
    open_logs(run, ck is not None)
    metrics: dict[str, float] = {}
    killed = False
    while run.step < run.args.total_decisions:
        if time_is_up(run):
            break
        t0, c0 = time.perf_counter(), time.process_time()
        collect_rollout(run)
        t_collect = time.perf_counter() - t0
        batch = rollout_batch(run)
        losses = ppo_update(run, batch)
        stats = end_update(run, batch, losses, t0, c0, t_collect)
        maybe_snapshot(run)
        done = run.step >= run.args.total_decisions
        killed = stop_after_updates is not None and run.update >= stop_after_updates
        metrics = log_update(run, batch, stats, done)
        if done or killed or (run.args.checkpoint_every and run.update % run.args.checkpoint_every == 0):
            save_run(run, run.ck_path)
        if killed:
            break
    return finish_run(run, metrics, killed)


# --- setup ----------------------------------------------------------------------------------------
@dataclass
class Run:
    """One rank's training run: what :func:`setup_run` builds, the loop advances and :func:`save_run`
    writes. ``net`` is what the updates call (the model, or its DDP wrapper averaging gradients)."""

    args: Args
    ranks: Ranks
    device: torch.device
    spec: Any
    model: ActorCritic
    optimizer: torch.optim.Optimizer
    vnorm: RunningNorm
    sample_gen: torch.Generator
    update_rng: np.random.Generator
    pool: OpponentPool
    log_dir: Path
    ck_dir: Path
    backend: str = ""
    collector: Any = None
    net: nn.Module | None = None
    amp: Any = None
    sparse_input: bool = False
    learner: Callable | None = None
    update: int = 0
    step: int = 0
    last_eval: dict[str, float] = field(default_factory=dict)
    writer: Any = None
    csv_log: _CsvLog | None = None
    bar: Any = None
    t_start: float = 0.0
    train_time: float = 0.0
    cpu_time: float = 0.0
    run_decisions: int = 0  # decisions made by this run, all ranks (not counting those before a resume)
    sync_checks: int = 0
    counts_before: np.ndarray | None = None  # the pool's counts before the rollout (for the ranks' exchange)

    @property
    def central(self) -> bool:
        return self.args.critic == "central"

    @property
    def ck_path(self) -> Path:
        return self.ck_dir / "last.pt"

    @property
    def rollout_decisions(self) -> int:
        return self.args.num_envs * self.args.num_steps  # every rank's games


def setup_run(args: Args, ck: dict | None, ranks: Ranks, device: torch.device) -> Run:
    """Seeds, network, optimizer, opponent pool and games of this rank: fresh, or restored from ``ck``."""
    log_dir, ck_dir = run_paths(args)
    if args.threads == 0:  # resolved once and stored, so that a resumed run uses the same number
        args = dataclasses.replace(args, threads=default_threads(ranks.local_world))
    torch.set_num_threads(args.threads)
    seed = rank_seed(args.seed, ranks.rank)  # this rank's streams (rank 0: the run's seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    spec = make_spec(args.game, args.game_options)
    backend = resolve_backend(args, spec, ck)
    # the updates' network inputs by their nonzero entries (agents/players/sparse_input.py): the same maths,
    # several times faster on the CPU; on a GPU the dense product is the fast one. The batched engine then
    # writes the observations in that form itself (make_vec's obs_format="sparse")
    sparse_input = device.type == "cpu" and not args.amp
    check_memory(args, spec, spec.Game.sparse_width(spec.game_config) if sparse_input and backend == "vec" else 0)
    model = ActorCritic(spec.obs_size, spec.num_actions, args.hidden, args.critic, spec.state_size)
    # fused: one kernel for all the parameters (about 4x faster than the loop over them on the CPU)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    vnorm = RunningNorm()
    sample_gen = torch.Generator().manual_seed(seed)
    update_rng = np.random.default_rng(seed + 7)
    pool = OpponentPool(args, spec, seed + 11)
    run = Run(args=args, ranks=ranks, device=device, spec=spec, model=model, optimizer=optimizer, vnorm=vnorm,
              sample_gen=sample_gen, update_rng=update_rng, pool=pool, log_dir=log_dir, ck_dir=ck_dir)
    run.backend, run.sparse_input = backend, sparse_input
    num_envs = rank_share(args.num_envs, ranks)
    capacity = num_envs * (args.num_steps + spec.num_players)
    if run.backend == "vec":
        run.collector = VecCollector(spec, num_envs, capacity, seed + 3, use_state=run.central,
                                     obs_format="sparse" if run.sparse_input else "dense")
    else:
        run.collector = Collector(spec, num_envs, capacity, seed + 3, use_state=run.central)
    if ck is not None:
        restore_run(run, ck)
    else:
        if args.init_from:
            init_weights(model, args)
        run.collector.start(pool.sample)
    model.to(device)
    if ck is not None:
        with _resume_errors(run, _LOAD_ERRORS):  # after model.to(device): Adam's state follows its parameters' device
            optimizer.load_state_dict(ck["optimizer"])
    run.net = wrap_ddp(model, ranks, device)
    run.amp = torch.autocast(device.type, dtype=torch.bfloat16) if args.amp else contextlib.nullcontext()
    run.learner = make_learner(run)
    return run


def check_memory(args: Args, spec, sparse_width: int = 0) -> None:
    """A rollout that cannot fit in memory is refused before anything is allocated (a lower bound: each
    stored transition's observation, mask and, for the central critic, state). The observation is float32
    dense, or with ``sparse_width`` (the batched engine's ``obs_format="sparse"``) that many int32 columns
    and float32 values and an int32 count."""
    from tarot_env.checks import check_fits

    obs = 8 * sparse_width + 4 if sparse_width else 4 * spec.obs_size
    per = obs + spec.num_actions + (4 * spec.state_size if args.critic == "central" else 0)
    rows = args.num_envs * (args.num_steps + spec.Game.num_players)
    check_fits(f"a rollout of num_envs={args.num_envs:,} x num_steps={args.num_steps:,}", rows * per,
               "lower num_envs or num_steps")


def resolve_backend(args: Args, spec, ck: dict | None) -> str:
    """``backend: auto`` resolved ('vec' where the game has a batched engine); a resumed run keeps its own."""
    backend = args.backend
    if backend == "auto":
        backend = "vec" if vec_available(spec.name) else "rules"
    if ck is not None:
        backend = ck["meta"].get("backend", backend)  # the resolved backend of the run being resumed
    if backend == "vec" and not vec_available(spec.name):
        raise ValueError(f"backend 'vec': tarot_env has no batched engine for {spec.name!r}; use 'rules' or 'auto'")
    return backend


_LOAD_ERRORS = (KeyError, TypeError, RuntimeError, ValueError)


@contextlib.contextmanager
def _resume_errors(run: Run, errors: tuple[type[Exception], ...] = (*_LOAD_ERRORS, IndexError, AttributeError)):
    """A checkpoint whose parts fail to load (one of ``errors``) is one ``ValueError`` naming the file."""
    try:
        yield
    except errors as e:
        raise ValueError(f"checkpoint {str(run.ck_path)!r} cannot be resumed: {type(e).__name__}: {e}") from None


def restore_run(run: Run, ck: dict) -> None:
    """Everything but the optimizer from the checkpoint, into the fresh objects of ``run`` (a failure
    leaves nothing half-loaded on disk)."""
    mine = ck["ranks"][run.ranks.rank]
    with _resume_errors(run):
        run.model.load_state_dict(ck["model"])
        run.vnorm.load_state_dict(ck["value_norm"])
        run.sample_gen.set_state(mine["rng"]["sample"])
        run.update_rng.bit_generator.state = json.loads(mine["rng"]["update"])
        run.pool.load_state_dict(ck["pool"])
        run.pool.load_stream_state(mine["pool"])
        if run.central and run.backend == "vec":  # a batched engine mirrors the state from its first state()
            run.collector.venv.state()            # call on: start that mirror so that the saved one is restored
            #                                       into it in place (its flat view stays valid), as in the run
        run.collector.load_state_dict(mine["collector"])
        torch.set_rng_state(mine["rng"]["torch"])
        np.random.set_state(_np_state_from(mine["rng"]["numpy_global"]))
        random.setstate(_py_state_from(mine["rng"]["python"]))
        run.update, run.step = int(ck["meta"]["update"]), int(ck["meta"]["step"])
        run.last_eval = dict(ck.get("stats", {}).get("last_eval", {})) if run.ranks.main else {}


def open_logs(run: Run, resume: bool) -> None:  # resume: whether a checkpoint was restored
    """Rank 0: TensorBoard, ``progress.csv`` (a resumed run drops the rows after its checkpoint) and the
    progress bar; then the clock starts."""
    if run.ranks.main:
        if not resume:  # a run started again (overwrite=true) replaces its curves instead of doubling them
            for old in run.log_dir.glob("events.out.tfevents.*"):
                old.unlink()
        run.writer = _writer(run.log_dir, purge_step=run.step if resume else None)
        run.csv_log = _CsvLog(run.log_dir / "progress.csv", keep_until=run.step if resume else None)
        run.bar = _progress(run.args, run.step)
    run.t_start = time.perf_counter()


def make_learner(run: Run) -> Callable:
    """The learner's batched act function for the collector: one forward pass on the device, sampling
    on the CPU with the run's checkpointed generator; values in return units (``norm_value``)."""
    args, device, model, amp = run.args, run.device, run.model, run.amp

    @torch.inference_mode()
    def learner(obs, mask: np.ndarray, state):
        if isinstance(obs, np.ndarray):
            o, m, s = to_device(device, obs, mask, state)  # one transfer off the CPU
        else:  # the engine's sparse rows (a CPU run): the input layers read them as they are
            o, (m, s) = SparseRows.from_obs(obs), to_device(device, mask, state)
        with amp:
            logits, v = model(o, m, s)
        if device.type != "cpu":  # one transfer back; sampling stays on the CPU generator
            back = torch.cat([logits.float(), v.float()[:, None]], 1).cpu()
            logits, v = back[:, :-1], back[:, -1]
        a = masked_sample(logits, run.sample_gen)
        logp = torch.log_softmax(logits, -1).gather(-1, a.unsqueeze(-1)).squeeze(-1)
        v = v.numpy()
        if args.norm_value:
            v = v * run.vnorm.std + run.vnorm.mean
        return a.numpy(), logp.numpy(), v

    return learner


# --- collect --------------------------------------------------------------------------------------
def time_is_up(run: Run) -> bool:
    """``time_limit_s``: rank 0's clock decides for every rank."""
    if not run.args.time_limit_s:
        return False
    over = float(run.ranks.main and time.perf_counter() - run.t_start > run.args.time_limit_s)
    return bool(all_sum(run.ranks, np.array([over]))[0] > 0)


def collect_rollout(run: Run) -> None:
    """``num_steps`` decisions in each of this rank's games (learner and opponents), into the buffer."""
    args, pool = run.args, run.pool
    if args.anneal_lr:
        for g in run.optimizer.param_groups:
            g["lr"] = args.learning_rate * max(0.0, 1.0 - run.step / args.total_decisions)
    run.collector.stats.reset()
    run.counts_before = pool.counts()
    run.model.eval()
    with weights_frozen():  # no weight changes during the rollout: input layers transposed once
        run.collector.collect(args.num_steps, run.learner, pool.act, pool.sample, pool.record)
    run.model.train()
    run.step += run.rollout_decisions
    run.run_decisions += run.rollout_decisions


# --- advantages -----------------------------------------------------------------------------------
@dataclass
class Batch:
    """The finished learner transitions of one rollout (``idx`` rows of the buffer), as tensors on the
    device; ``n`` of them on this rank, ``n_all`` on every rank together."""

    idx: np.ndarray
    n: int
    n_all: int
    ret_np: np.ndarray
    old_v_np: np.ndarray
    obs: Any
    mask: Any
    state: Any
    actions: torch.Tensor
    old_logp: torch.Tensor
    adv: torch.Tensor
    ret: torch.Tensor
    old_v: torch.Tensor


def rollout_batch(run: Run) -> Batch:
    """GAE over the closed transitions, the ranks' counts exchanged, values normalised (``norm_value``)."""
    args, buf = run.args, run.collector.buf
    adv_all, ret_all = compute_gae(buf, args.gamma, args.gae_lambda, args.win_bonus)
    idx = np.flatnonzero(buf.closed[:buf.size])
    n = len(idx)
    n_all = exchange_counts(run, n)
    ret_np = ret_all[idx]
    old_v_np = buf.value[idx]
    if args.norm_value:
        run.vnorm.update(np.concatenate(all_gather(run.ranks, ret_np)) if run.ranks.world > 1 else ret_np)
        ret_np = (ret_np - run.vnorm.mean) / run.vnorm.std
        old_v_np = (old_v_np - run.vnorm.mean) / run.vnorm.std
    tensors = to_batch(
        run.device, buf.obs_rows(idx), buf.mask[idx], buf.state[idx] if run.central else None, buf.action[idx],
        buf.logp[idx], adv_all[idx], ret_np.astype(np.float32), old_v_np.astype(np.float32),
        sparse=(0, 2) if run.sparse_input else ())
    return Batch(idx, n, n_all, ret_np, old_v_np, *tensors)


def exchange_counts(run: Run, n: int) -> int:
    """Several ranks: one exchange sums the learner transitions and the pool's new results (the pool's
    counts become the same on every rank). Returns the transitions of every rank."""
    if run.ranks.world == 1:
        return n
    pool, before = run.pool, run.counts_before
    summed = all_sum(run.ranks, np.concatenate([[n], (pool.counts() - before).ravel()]))
    pool.set_counts(before + summed[1:].reshape(-1, 2))
    return int(summed[0])


# --- clipped PPO updates --------------------------------------------------------------------------
@dataclass
class Losses:
    """Per-minibatch values of one update."""

    policy: list[float] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    approx_kl: list[float] = field(default_factory=list)
    clipfrac: list[float] = field(default_factory=list)


def ppo_update(run: Run, b: Batch) -> Losses:
    """``update_epochs`` passes of shuffled minibatches (stopping early past ``target_kl``)."""
    args, ranks = run.args, run.ranks
    losses = Losses()
    for _epoch in range(args.update_epochs):
        perm = torch.from_numpy(run.update_rng.permutation(b.n)).to(run.device)
        for sl in minibatch_slices(b.n, args.num_minibatches):
            j = perm[sl]
            if len(j) == 0 and ranks.world == 1:
                continue
            minibatch_step(run, b, j, losses)
        if args.target_kl:  # the ranks' mean KL: every rank stops at the same epoch
            kls = losses.approx_kl
            kl = float(np.mean(kls[-args.num_minibatches:])) if kls else 0.0
            if all_sum(ranks, np.array([kl]))[0] / ranks.world > args.target_kl:
                break
    return losses


def minibatch_step(run: Run, b: Batch, j: torch.Tensor, losses: Losses) -> None:
    """One gradient step on the rows ``j`` (none: a step that adds nothing to the ranks' average, as
    DistributedDataParallel needs every rank to take part)."""
    args = run.args
    with run.amp:
        logits, newv = run.net(b.obs[j], b.mask[j], b.state[j] if run.central else None)
    logits, newv = logits.float(), newv.float()
    if len(j) == 0:  # this rank has no rows for this minibatch: it adds nothing to the average
        optimizer_step(run, 0.0 * (logits.sum() + newv.sum()))
        return
    pg_loss, v_loss, ent = ppo_losses(args, b, j, logits, newv, losses)
    optimizer_step(run, pg_loss - args.ent_coef * ent + args.vf_coef * v_loss)
    losses.policy.append(pg_loss.item())
    losses.value.append(v_loss.item())
    losses.entropy.append(ent.item())


def ppo_losses(args: Args, b: Batch, j: torch.Tensor, logits: torch.Tensor, newv: torch.Tensor,
               losses: Losses) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The clipped policy loss, the (clipped) value loss and the mean entropy of the rows ``j``; the
    approximate KL and the clip fraction go to ``losses``."""
    newlogp, entropy = masked_logp_entropy(logits, b.mask[j], b.actions[j])
    logratio = newlogp - b.old_logp[j]
    ratio = logratio.exp()
    with torch.no_grad():
        losses.approx_kl.append(float(((ratio - 1) - logratio).mean()))
        losses.clipfrac.append(float(((ratio - 1.0).abs() > args.clip_coef).float().mean()))
    a = b.adv[j]
    if args.norm_adv and len(j) > 1:
        a = (a - a.mean()) / (a.std() + 1e-8)
    pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
    old_v, ret = b.old_v[j], b.ret[j]
    if args.clip_vloss:
        v_clipped = old_v + (newv - old_v).clamp(-args.clip_coef, args.clip_coef)
        v_loss = 0.5 * torch.max((newv - ret) ** 2, (v_clipped - ret) ** 2).mean()
    else:
        v_loss = 0.5 * ((newv - ret) ** 2).mean()
    return pg_loss, v_loss, entropy.mean()


def optimizer_step(run: Run, loss: torch.Tensor) -> None:
    run.optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(run.model.parameters(), run.args.max_grad_norm)
    run.optimizer.step()


@dataclass
class UpdateStats:
    """What one update measured besides its losses: for the logs."""

    losses: Losses
    explained: float
    phase_ent: dict[str, float]
    t_collect: float
    dt: float
    cpu: float


def end_update(run: Run, b: Batch, losses: Losses, t0: float, c0: float, t_collect: float) -> UpdateStats:
    """After the gradient steps: value-fit and per-phase statistics, the buffer keeps only the open
    transitions, the update is counted (and the ranks' weights compared: ``check_sync``), times taken."""
    var_y = float(np.var(b.ret_np))
    explained = float("nan") if var_y == 0 else 1.0 - float(np.var(b.ret_np - b.old_v_np)) / var_y
    buf = run.collector.buf
    phase_ent = _phase_entropy(buf.phase[b.idx], run.model, b.obs, b.mask, run.spec) if run.ranks.main else {}
    run.collector.after_update()
    run.update += 1
    if run.args.check_sync and run.ranks.world > 1:
        check_in_sync(run.ranks, run.model, run.update)
        run.sync_checks += 1
    dt = time.perf_counter() - t0
    cpu = max(time.process_time() - c0, 1e-9)
    run.train_time += dt
    run.cpu_time += cpu
    return UpdateStats(losses, explained, phase_ent, t_collect, dt, cpu)


def maybe_snapshot(run: Run) -> None:
    """Every ``snapshot_every`` updates the learner joins the opponent pool (retired snapshots that some
    rank's game still seats are kept until those games end)."""
    if run.args.snapshot_every and run.update % run.args.snapshot_every == 0:
        in_use = set().union(*all_gather(run.ranks, set(run.collector.opp.tolist())))
        run.pool.add_snapshot(run.model, run.update, in_use)


# --- log and evaluate -----------------------------------------------------------------------------
def log_update(run: Run, b: Batch, s: UpdateStats, done: bool) -> dict[str, float]:
    """Evaluate when due (rank 0), gather the update's scalars, log them (rank 0) and move the bar."""
    args = run.args
    evaluated = run.ranks.main and ((args.eval_every and run.update % args.eval_every == 0) or done)
    if evaluated:
        run.last_eval = evaluate(run)
    metrics = update_metrics(run, b, s)
    if run.ranks.main:
        if evaluated:  # evaluation scalars are logged when they are measured
            metrics.update(run.last_eval)
        for k, v in metrics.items():
            if not (isinstance(v, float) and math.isnan(v)):
                run.writer.add_scalar(k, v, run.step)
        run.csv_log.write(run.step, run.update, time.perf_counter() - run.t_start, metrics)
        metrics.update(run.last_eval)
    if run.bar is not None:
        _advance_bar(run, s.dt, metrics)
    return metrics


def update_metrics(run: Run, b: Batch, s: UpdateStats) -> dict[str, float]:
    n_dec, L, buf = run.rollout_decisions, s.losses, run.collector.buf
    return {
        "losses/policy": _mean(L.policy), "losses/value": _mean(L.value),
        "losses/entropy": _mean(L.entropy), "losses/approx_kl": _mean(L.approx_kl),
        "losses/clipfrac": _mean(L.clipfrac), "losses/explained_variance": s.explained,
        "charts/learning_rate": run.optimizer.param_groups[0]["lr"],
        "charts/decisions_per_s": n_dec / s.dt, "charts/learner_transitions_per_s": b.n_all / s.dt,
        "charts/decisions_per_cpu_s": n_dec / run.ranks.world / s.cpu,
        "charts/collect_share": s.t_collect / s.dt, "charts/transitions": b.n_all,
        # read after the buffer kept its open transitions at the front (Collector.after_update)
        "charts/mean_reward": float(buf.reward[b.idx].mean()) if b.n else 0.0,
        **run.collector.stats.summary(), **run.pool.summary(), **s.phase_ent,
    }


def _advance_bar(run: Run, dt: float, metrics: dict[str, float]) -> None:
    n_dec = run.rollout_decisions
    run.bar.update(n_dec)
    post = {"dec/s": f"{n_dec / dt:,.0f}"}
    if "eval/win_share_vs_random" in run.last_eval:
        post["win"] = f"{100 * run.last_eval['eval/win_share_vs_random']:.0f}%"
    if "pool/win_rate_vs_pool" in metrics:
        post["pool_win"] = f"{100 * metrics['pool/win_rate_vs_pool']:.0f}%"
    run.bar.set_postfix(post)


def evaluate(run: Run) -> dict[str, float]:
    """Duplicate deals against random play (the same ``eval_seed`` deals every time), on the CPU."""
    args, model = run.args, run.model
    cpu_model = model if run.device.type == "cpu" else copy.deepcopy(model).cpu()
    pol = NetworkPolicy(cpu_model, greedy=args.eval_greedy, seed=args.eval_seed)
    r = duplicate_eval(run.spec, pol, None, args.eval_deals, args.eval_seed)
    model.train()
    return {"eval/margin_vs_random": r.mean_margin, "eval/margin_ci95": r.ci95,
            "eval/win_share_vs_random": r.win_share, "eval/tie_share_vs_random": r.tie_share}


# --- checkpoint and finish ------------------------------------------------------------------------
def save_run(run: Run, path: Path) -> None:
    """Every rank's random states, pool streams and games gathered to rank 0, which writes the file."""
    mine = {"rng": {"sample": run.sample_gen.get_state(), "update": json.dumps(run.update_rng.bit_generator.state),
                    "torch": torch.get_rng_state(), "numpy_global": _np_state_to(np.random.get_state()),
                    "python": _py_state_to(random.getstate())},
            "pool": run.pool.stream_state(), "collector": run.collector.state_dict()}
    every = gather_to_main(run.ranks, mine)
    if not run.ranks.main:
        return
    spec, args = run.spec, run.args
    save_checkpoint(path, {
        "meta": {"game": spec.name, "env_id": spec.env_id, "env_version": spec.version,
                 "obs_size": spec.obs_size, "state_size": spec.state_size,
                 "num_actions": spec.num_actions, "config": args.to_dict(), "update": run.update,
                 "step": run.step, "backend": run.backend, "world_size": run.ranks.world, "device": str(run.device),
                 "tarot_env_version": tarot_env.__version__, "torch_version": str(torch.__version__)},
        "model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
        "value_norm": run.vnorm.state_dict(), "pool": run.pool.state_dict(), "ranks": every,
        "stats": {"last_eval": run.last_eval},
    })


def finish_run(run: Run, metrics: dict[str, float], killed: bool) -> dict[str, Any]:
    """A complete run (decision budget reached, or the time limit) writes ``final.pt`` (after one more
    evaluation and checkpoint if the time limit stopped it) and rank 0 ``summary.json``; the logs close.
    Returns the last metrics and the run's totals."""
    if not killed:
        if run.step < run.args.total_decisions:  # stopped by the time limit: evaluate and save where it is
            if run.ranks.main:
                run.last_eval = evaluate(run)
                metrics.update(run.last_eval)
                for k, v in run.last_eval.items():
                    run.writer.add_scalar(k, v, run.step)
            save_run(run, run.ck_path)
        save_run(run, run.ck_dir / "final.pt")
    if run.ranks.main:
        run.writer.flush()
        run.writer.close()
    if run.bar is not None:
        run.bar.close()
    metrics.update(run_totals(run))
    if not killed:
        metrics["final_checkpoint"] = str(run.ck_dir / "final.pt")
    if not killed and run.ranks.main:
        with open(run.log_dir / "summary.json", "w") as f:
            json.dump({k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}, f, indent=1)
    return metrics


def run_totals(run: Run) -> dict[str, Any]:
    ranks, args = run.ranks, run.args
    return {"checkpoint": str(run.ck_path), "step": run.step, "update": run.update, "backend": run.backend,
            "world_size": ranks.world, "rank": ranks.rank, "device": str(run.device),
            "threads": args.threads, "sync_checks": run.sync_checks,
            "train_time_s": run.train_time,
            "decisions_per_s_overall": run.run_decisions / max(run.train_time, 1e-9),
            "cpu_time_s": run.cpu_time,
            "decisions_per_cpu_s": run.run_decisions / ranks.world / max(run.cpu_time, 1e-9)}


def to_batch(device: torch.device, *arrays, sparse: tuple[int, ...] = ()) -> list:
    """A rollout's arrays as tensors on ``device`` (each moved once per update); the arrays at the
    positions ``sparse`` (network inputs, CPU only) as ``SparseRows``, their nonzero entries. An array may
    be the engine's sparse rows already (``SparseObs``, from a sparse rollout buffer): taken as they are
    (or densified where ``sparse`` does not name it)."""
    def one(i, a):
        if a is None:
            return None
        if not isinstance(a, np.ndarray):
            return SparseRows.from_obs(a) if i in sparse else torch.from_numpy(a.dense()).to(device)
        return SparseRows.of(a) if i in sparse else torch.from_numpy(a).to(device)

    return [one(i, a) for i, a in enumerate(arrays)]


def _mean(x: list[float]) -> float:
    return float(np.mean(x)) if x else float("nan")


def phase_tag(spec, phase: int) -> str:
    """A phase as the TensorBoard tags name it: its name (``PLAY``, ``DISCARD`` …), as every ``phase/…`` tag."""
    names = {int(p): p.name for p in spec.Game.Phase}
    return names.get(int(phase), str(int(phase)))


def _phase_entropy(phases: np.ndarray, model: ActorCritic, obs, mask, spec) -> dict[str, float]:
    """Mean policy entropy per decision phase (on at most 512 transitions per phase), tagged by phase name."""
    out = {}
    with torch.no_grad():
        for p in np.unique(phases):
            j = torch.from_numpy(np.flatnonzero(phases == p)[:512])
            logits = model.masked_logits(obs[j], mask[j])
            _, ent = masked_logp_entropy(logits, mask[j], logits.argmax(-1))
            out[f"phase/{phase_tag(spec, p)}/entropy"] = float(ent.mean())
    return out


# --- small helpers: RNG states as weights_only-safe values, logs, progress bar ---------------------
def _np_state_to(s) -> dict:
    return {"name": s[0], "keys": torch.from_numpy(s[1].astype(np.int64)), "pos": int(s[2]),
            "has_gauss": int(s[3]), "gauss": float(s[4])}


def _np_state_from(d) -> tuple:
    return (d["name"], d["keys"].numpy().astype(np.uint32), d["pos"], d["has_gauss"], d["gauss"])


def _py_state_to(s) -> list:
    return [s[0], list(s[1]), s[2]]


def _py_state_from(d) -> tuple:
    return (d[0], tuple(d[1]), d[2])


def _writer(log_dir: Path, purge_step: int | None):
    from torch.utils.tensorboard import SummaryWriter

    log_dir.mkdir(parents=True, exist_ok=True)
    return SummaryWriter(str(log_dir), purge_step=purge_step)


class _CsvLog:
    """``progress.csv``: one row per update (step, update, seconds, then the logged scalars)."""

    KEYS = ["losses/policy", "losses/value", "losses/entropy", "losses/approx_kl", "losses/clipfrac",
            "losses/explained_variance", "charts/decisions_per_s", "charts/decisions_per_cpu_s",
            "charts/mean_reward",
            "pool/win_rate_vs_pool", "eval/margin_vs_random", "eval/margin_ci95", "eval/win_share_vs_random",
            "phase/DISCARD/card_points_kept", "charts/collect_share"]

    def __init__(self, path: Path, keep_until: int | None):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = []
        if keep_until is not None and path.exists():
            with open(path) as f:
                rows = [r for r in csv.reader(f)][1:]
            rows = [r for r in rows if r and int(r[0]) <= keep_until]
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "update", "seconds", *self.KEYS])
            w.writerows(rows)

    def write(self, step: int, update: int, seconds: float, metrics: dict) -> None:
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([step, update, f"{seconds:.2f}",
                                    *[metrics.get(k, "") for k in self.KEYS]])


def _progress(args: Args, step: int):
    if not args.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=args.total_decisions, initial=step, unit="dec", unit_scale=True,
                desc=f"{args.game} s{args.seed}", dynamic_ncols=True)


# ==================================================================================================
# Command line: tarot-train --config configs/partita.yaml [--resume] [key=value ...]
# ==================================================================================================
SUMMARY_KEYS = ("step", "update", "world_size", "device", "threads", "train_time_s", "decisions_per_s_overall",
                "cpu_time_s", "decisions_per_cpu_s", "eval/margin_vs_random", "eval/margin_ci95",
                "eval/win_share_vs_random", "checkpoint", "final_checkpoint")
SHORT_RUN = 200_000  # decisions: a run shorter than this is not expected to beat random play yet


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``tarot-train`` (``agents.cli.train_parser``); returns the last metrics. Bad input: one line on stderr
    and ``SystemExit(2)``."""
    from ..parsers import parse_train

    return run_parsed(parse_train(argv))


def run_parsed(ns) -> dict[str, Any]:
    """Train as the parsed command line ``ns`` says, and print the summary (rank 0)."""
    import sys

    try:
        args = load_config(ns.config, ns.overrides)
        result = train(args, resume=ns.resume if ns.resume is not None else False)
    except ValueError as e:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        where = f"rank {os.environ.get('RANK', '0')}/{world}: " if world > 1 else ""
        print(f"tarot-train: error: {where}{e}", file=sys.stderr)
        raise SystemExit(2) from None
    if result.get("rank", 0) == 0:
        print(json.dumps(run_summary(result), indent=1))
    return result


def run_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the command line prints at the end: the totals, the last evaluation, the checkpoints
    (``final_checkpoint``: ``final.pt``, what a finished run is evaluated from) and, after a short run, that
    losing is expected."""
    out = {k: result[k] for k in SUMMARY_KEYS if k in result}
    if "final_checkpoint" in out and out["step"] < SHORT_RUN:
        out["note"] = (f"a run of {out['step']:,} decisions is a check that training works, not a trained "
                       "policy: a margin below 0 against random play is expected (configs/partita.yaml "
                       "trains one)")
    return out


def run_cli(ns) -> int:
    """The body of the ``tarot-train`` console script (``agents.cli.train``): 0, or ``SystemExit(2)``."""
    run_parsed(ns)
    return 0


def cli() -> int:
    """``python -m agents.training.ppo`` (what torchrun starts): as ``tarot-train``, Ctrl-C included."""
    from tarot_env.commands import run_command

    def body() -> int:
        main()
        return 0

    return run_command("tarot-train", body)


if __name__ == "__main__":  # python -m agents.training.ppo (what torchrun starts: -m agents.training.ppo)
    raise SystemExit(cli())
