"""Masked PPO self-play for the tarot games (CleanRL-style: one readable file).

One policy plays every seat (observations are seat-relative, partners share rewards) and every
decision type (discards, declarations, signals, cards) through one flat action space; illegal
actions get probability zero (masked logits) and the entropy is over the legal actions only.

    python scripts/train.py --config configs/partita.yaml total_decisions=2000000 seed=3
    tarot-train --config configs/partita.yaml --resume          # overrides may follow --resume too

Pieces, top to bottom: ``Args`` (every hyperparameter, documented), ``OpponentPool`` (self-play against
frozen snapshots and fixed policies), the small distributed helpers, ``train(args)`` (collect → GAE →
clipped updates → log → evaluate → checkpoint). The network (``ActorCritic``) and the masked-distribution
maths (``masked``, ``masked_logp_entropy``, ``masked_sample``: the maths the tests check by hand) live in
``agents.network``, which the policy side imports too.

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

    torchrun --standalone --nproc_per_node=2 -m agents.ppo --config configs/partita.yaml
    torchrun --standalone --nproc_per_node=auto -m agents.ppo --config configs/partita.yaml  # one per core / GPU
    # two machines (run on each, same config; host0 is reachable from both):
    torchrun --nnodes=2 --nproc_per_node=4 --node_rank=<0|1> --rdzv_backend=c10d \
             --rdzv_endpoint=host0:29500 --rdzv_id=partita1 --rdzv_conf join_timeout=120 \
             -m agents.ppo --config configs/partita.yaml

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
import datetime
import hashlib
import itertools
import json
import math
import os
import random
import re
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Idle OpenMP threads sleep rather than spin. libgomp reads this when torch loads it, so it is set before
# ``import torch`` (unless the user chose a policy): with other processes on the same cores, spinning
# threads made a 2-thread run 8x slower (4,351 vs 553 decisions/s measured on 2 busy cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

import tarot_env

from .evaluate import duplicate_eval
from .network import ActorCritic, masked_logp_entropy, masked_sample
from .policy import NetworkPolicy, Policy, RandomPolicy, load_checkpoint, save_checkpoint
from .registry import load_policy as load_player
from .rollout import SELF, Collector, VecCollector, compute_gae, make_spec, vec_available
from .sparse_input import SparseRows, weights_frozen


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
    """fixed opponents for the pool: any player spec of agents.registry.load_policy (``heuristic``,
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
        for f in dataclasses.fields(self):
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


CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


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
# Devices and ranks (torch.distributed): small helpers, each a no-op for one process
# ==================================================================================================
@dataclass
class Ranks:
    """This process's place in the run: ``rank`` of ``world`` (``local_rank`` of ``local_world`` on its
    machine); ``group`` is the gloo group of the small CPU exchanges (None for one process)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    group: Any = None
    owns_group: bool = False

    @property
    def main(self) -> bool:
        return self.rank == 0


def resolve_device(name: str, local_rank: int = 0, local_world: int = 1) -> torch.device:
    """``auto`` | ``cpu`` | ``cuda`` | ``cuda:N`` -> a device (``cuda`` with several ranks per machine:
    the rank's own GPU ``cuda:<local_rank>``); CUDA asked for where there is none is a ``ValueError``."""
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {name!r}: this torch ({torch.__version__}) sees no CUDA device; "
                         "use device=cpu or device=auto")
    if name in ("auto", "cuda"):
        index = local_rank
    elif local_world > 1:
        raise ValueError(f"device {name!r} names one GPU but {local_world} ranks run on this machine; "
                         "use device=cuda (each rank takes cuda:<local rank>)")
    else:
        index = int(name.split(":")[1])
    if index >= torch.cuda.device_count():
        raise ValueError(f"device 'cuda:{index}' does not exist: this machine has "
                         f"{torch.cuda.device_count()} CUDA device(s)")
    return torch.device("cuda", index)


def default_threads(local_world: int) -> int:
    """``threads: 0``: the cores this process may use, shared evenly by the ranks on this machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, local_world))


def init_ranks(args: Args) -> tuple[Ranks, torch.device]:
    """Join the process group when started by torchrun (``WORLD_SIZE`` > 1), else one process.

    gloo on the CPU, NCCL on CUDA (plus a gloo group for the small CPU exchanges). A rank that cannot
    reach the rendezvous within ``dist_timeout_s`` raises a one-line ``ValueError``.
    """
    env = os.environ
    world = int(env.get("WORLD_SIZE", "1"))
    r = Ranks(rank=int(env.get("RANK", "0")), world=world, local_rank=int(env.get("LOCAL_RANK", "0")),
              local_world=int(env.get("LOCAL_WORLD_SIZE", "1")))
    device = resolve_device(args.device, r.local_rank, r.local_world)
    if args.amp and device.type != "cuda":
        raise ValueError(f"amp: true needs a CUDA device (this run trains on {device})")
    if world == 1:
        return r, device
    if args.num_envs < world:
        raise ValueError(f"num_envs={args.num_envs} games cannot be split between {world} ranks; "
                         f"use num_envs >= {world}")
    if not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(device)
        try:
            with _cpp_stderr_held() as held:  # c10d's own retry logs: shown only if the join succeeds
                dist.init_process_group(backend, rank=r.rank, world_size=world,
                                        timeout=datetime.timedelta(seconds=args.dist_timeout_s))
                held.keep = True
        except Exception as e:  # noqa: BLE001  (store or peers unreachable: one line, not a traceback)
            where = f"{env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ValueError(f"could not join the other ranks at {where} within {args.dist_timeout_s:g} s "
                             f"({type(e).__name__}: {first})") from None
        r.owns_group = True
    r.group = dist.new_group(backend="gloo") if dist.get_backend() == "nccl" else dist.group.WORLD
    return r, device


@contextlib.contextmanager
def _cpp_stderr_held():
    """Hold what C++ code writes to file descriptor 2 meanwhile; write it out only if ``keep`` is set."""
    import sys
    import tempfile

    class Held:
        keep = False

    held = Held()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if held.keep:
                tmp.seek(0)
                sys.stderr.write(tmp.read().decode(errors="replace"))


def close_ranks(r: Ranks) -> None:
    if r.owns_group and dist.is_initialized():
        dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """Rank 0 uses the run's seed (one process is unchanged); rank r > 0 a seed derived from (seed, r)."""
    return seed if rank == 0 else int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def rank_share(num_envs: int, r: Ranks) -> int:
    """The games of rank r: an even split of ``num_envs`` (the first ranks take the remainder)."""
    return num_envs // r.world + (r.rank < num_envs % r.world)


def broadcast(r: Ranks, obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if r.world == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=r.group)
    return box[0]


def all_gather(r: Ranks, obj: Any) -> list:
    if r.world == 1:
        return [obj]
    out: list = [None] * r.world
    dist.all_gather_object(out, obj, group=r.group)
    return out


def gather_to_main(r: Ranks, obj: Any) -> list | None:
    """Every rank's ``obj`` on rank 0 (in rank order), None elsewhere."""
    if r.world == 1:
        return [obj]
    out: list | None = [None] * r.world if r.main else None
    dist.gather_object(obj, out, dst=0, group=r.group)
    return out


def all_sum(r: Ranks, x: np.ndarray) -> np.ndarray:
    """The element-wise sum over the ranks (float64; exact for counts)."""
    if r.world == 1:
        return x
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    dist.all_reduce(t, group=r.group)
    return t.numpy()


def weights_digest(model: nn.Module) -> int:
    """A 63-bit digest of every parameter's bytes (equal on every rank while the ranks agree)."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return int.from_bytes(h.digest()[:8], "little") >> 1


def check_in_sync(r: Ranks, model: nn.Module, update: int) -> None:
    """``check_sync``: every rank's weights must be bit for bit rank 0's."""
    digests = all_gather(r, weights_digest(model))
    if len(set(digests)) > 1:
        raise RuntimeError(f"the ranks' weights differ after update {update}: digests {digests}")


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


def open_run(args: Args, resume: bool, r: Ranks) -> tuple[Args, dict | None]:
    """Rank 0 checks the run directory and reads and verifies the checkpoint to resume; every rank gets
    the same answer (the args to run, the checkpoint) or the same ``ValueError``."""
    err, ck = None, None
    if r.main:
        try:
            ck_path = run_paths(args)[1] / "last.pt"
            if not resume and ck_path.exists() and not args.overwrite:
                raise ValueError(f"run {str(ck_path.parent)!r} already has a checkpoint: pass --resume to "
                                 "continue it, overwrite=true to start it again, or another run_name")
            if resume:
                ck = load_checkpoint(ck_path, args.game)
                check_resumable(ck, ck_path, r.world)
        except ValueError as e:
            err = str(e)
    err, ck = broadcast(r, (err, ck))
    if err:
        raise ValueError(err)
    if ck is None:
        return args, None
    saved = Args.from_dict(ck["meta"]["config"])
    changed = {k for k in _FIELD_TYPES if getattr(saved, k) != getattr(args, k)}
    changed -= {*RESUME_MAY_CHANGE, "run_name", "overwrite", *(["threads"] if args.threads == 0 else [])}
    if changed and r.main:
        print(f"resume: keeping the checkpoint's values of {sorted(changed)}")
    return dataclasses.replace(saved, **{k: getattr(args, k) for k in RESUME_MAY_CHANGE}), ck


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


def train(args: Args, resume: bool = False, stop_after_updates: int | None = None) -> dict[str, Any]:
    """Train with PPO self-play; returns the last metrics (and the checkpoint path under "checkpoint").

    ``resume`` continues from ``<save_dir>/<run_name>/last.pt`` exactly where it stopped (the
    checkpoint's config is used; only the keys of ``RESUME_MAY_CHANGE`` may change). ``stop_after_updates``
    simulates a killed run (tests): stop after that many updates, right after the checkpoint of that
    update. Started by torchrun, this process is one rank of a data-parallel run (module docstring).
    """
    ranks, device = init_ranks(args)
    try:
        out = _train(args, resume, stop_after_updates, ranks, device)
        if ranks.owns_group and ranks.world > 1:
            # every rank reaches the end before any tears the group down: a rank that destroys gloo's
            # group while rank 0 still evaluates and writes its files can abort at exit (SIGABRT)
            dist.barrier(group=ranks.group)
        return out
    finally:
        close_ranks(ranks)


def _train(args: Args, resume: bool, stop_after_updates: int | None, ranks: Ranks,
           device: torch.device) -> dict[str, Any]:
    args, ck = open_run(args, resume, ranks)
    log_dir, ck_dir = run_paths(args)
    ck_path = ck_dir / "last.pt"
    if args.threads == 0:  # resolved once and stored, so that a resumed run uses the same number
        args = dataclasses.replace(args, threads=default_threads(ranks.local_world))
    main_rank = ranks.main

    torch.set_num_threads(args.threads)
    seed = rank_seed(args.seed, ranks.rank)  # this rank's streams (rank 0: the run's seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    spec = make_spec(args.game, args.game_options)
    central = args.critic == "central"
    model = ActorCritic(spec.obs_size, spec.num_actions, args.hidden, args.critic, spec.state_size)
    # fused: one kernel for all the parameters (about 4x faster than the loop over them on the CPU)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5, fused=True)
    vnorm = RunningNorm()
    sample_gen = torch.Generator().manual_seed(seed)
    update_rng = np.random.default_rng(seed + 7)
    pool = OpponentPool(args, spec, seed + 11)
    P = spec.num_players
    num_envs = rank_share(args.num_envs, ranks)
    capacity = num_envs * (args.num_steps + P)
    backend = args.backend
    if backend == "auto":
        backend = "vec" if vec_available(spec.name) else "rules"
    if ck is not None:
        backend = ck["meta"].get("backend", backend)  # the resolved backend of the run being resumed
    if backend == "vec" and not vec_available(spec.name):
        raise ValueError(f"backend 'vec': tarot_env has no batched engine for {spec.name!r}; use 'rules' or 'auto'")
    Coll = VecCollector if backend == "vec" else Collector
    collector = Coll(spec, num_envs, capacity, seed + 3, use_state=central)
    update, step = 0, 0
    last_eval: dict[str, float] = {}
    if ck is not None:
        mine = ck["ranks"][ranks.rank]
        try:  # everything is restored into fresh objects; a failure leaves nothing half-loaded on disk
            model.load_state_dict(ck["model"])
            vnorm.load_state_dict(ck["value_norm"])
            sample_gen.set_state(mine["rng"]["sample"])
            update_rng.bit_generator.state = json.loads(mine["rng"]["update"])
            pool.load_state_dict(ck["pool"])
            pool.load_stream_state(mine["pool"])
            if central and backend == "vec":  # a batched engine mirrors the state from its first state()
                collector.venv.state()        # call on: start that mirror so that the saved one is restored
                #                               into it in place (its flat view stays valid), as in the run
            collector.load_state_dict(mine["collector"])
            torch.set_rng_state(mine["rng"]["torch"])
            np.random.set_state(_np_state_from(mine["rng"]["numpy_global"]))
            random.setstate(_py_state_from(mine["rng"]["python"]))
            update, step = int(ck["meta"]["update"]), int(ck["meta"]["step"])
            last_eval = dict(ck.get("stats", {}).get("last_eval", {})) if main_rank else {}
        except (KeyError, TypeError, RuntimeError, ValueError, IndexError, AttributeError) as e:
            raise ValueError(f"checkpoint {str(ck_path)!r} cannot be resumed: {type(e).__name__}: {e}") from None
    else:
        if args.init_from:
            init_weights(model, args)
        collector.start(pool.sample)
    model.to(device)
    if ck is not None:
        try:  # after model.to(device): Adam's state follows its parameters' device
            optimizer.load_state_dict(ck["optimizer"])
        except (KeyError, TypeError, RuntimeError, ValueError) as e:
            raise ValueError(f"checkpoint {str(ck_path)!r} cannot be resumed: {type(e).__name__}: {e}") from None
    net: nn.Module = model  # what the updates call: the model, or its DDP wrapper averaging gradients
    if ranks.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    amp = torch.autocast(device.type, dtype=torch.bfloat16) if args.amp else contextlib.nullcontext()
    # the updates' network inputs by their nonzero entries (agents/sparse_input.py): the same maths,
    # several times faster on the CPU; on a GPU the dense product is the fast one
    sparse_input = device.type == "cpu" and not args.amp

    def checkpoint(path: Path) -> None:
        mine = {"rng": {"sample": sample_gen.get_state(), "update": json.dumps(update_rng.bit_generator.state),
                        "torch": torch.get_rng_state(), "numpy_global": _np_state_to(np.random.get_state()),
                        "python": _py_state_to(random.getstate())},
                "pool": pool.stream_state(), "collector": collector.state_dict()}
        every = gather_to_main(ranks, mine)
        if not main_rank:
            return
        save_checkpoint(path, {
            "meta": {"game": spec.name, "env_id": spec.env_id, "env_version": spec.version,
                     "obs_size": spec.obs_size, "state_size": spec.state_size,
                     "num_actions": spec.num_actions, "config": args.to_dict(), "update": update,
                     "step": step, "backend": backend, "world_size": ranks.world, "device": str(device),
                     "tarot_env_version": tarot_env.__version__, "torch_version": str(torch.__version__)},
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "value_norm": vnorm.state_dict(), "pool": pool.state_dict(), "ranks": every,
            "stats": {"last_eval": last_eval},
        })

    writer = _writer(log_dir, purge_step=step if resume else None) if main_rank else None
    csv_log = _CsvLog(log_dir / "progress.csv", keep_until=step if resume else None) if main_rank else None
    bar = _progress(args, step) if main_rank else None

    @torch.inference_mode()
    def learner(obs: np.ndarray, mask: np.ndarray, state):
        o, m, s = to_device(device, obs, mask, state)  # one transfer off the CPU
        with amp:
            logits, v = model(o, m, s)
        if device.type != "cpu":  # one transfer back; sampling stays on the CPU generator
            back = torch.cat([logits.float(), v.float()[:, None]], 1).cpu()
            logits, v = back[:, :-1], back[:, -1]
        a = masked_sample(logits, sample_gen)
        logp = torch.log_softmax(logits, -1).gather(-1, a.unsqueeze(-1)).squeeze(-1)
        v = v.numpy()
        if args.norm_value:
            v = v * vnorm.std + vnorm.mean
        return a.numpy(), logp.numpy(), v

    def evaluate() -> dict[str, float]:
        cpu_model = model if device.type == "cpu" else copy.deepcopy(model).cpu()
        pol = NetworkPolicy(cpu_model, greedy=args.eval_greedy, seed=args.eval_seed)
        r = duplicate_eval(spec, pol, None, args.eval_deals, args.eval_seed)
        model.train()
        return {"eval/margin_vs_random": r.mean_margin, "eval/margin_ci95": r.ci95,
                "eval/win_share_vs_random": r.win_share, "eval/tie_share_vs_random": r.tie_share}

    t_start = time.perf_counter()
    train_time = cpu_time = 0.0
    run_decisions = 0  # decisions made by this run, all ranks (not counting those before a resume)
    sync_checks = 0
    metrics: dict[str, float] = {}
    buf = collector.buf
    killed = False
    while step < args.total_decisions:
        if args.time_limit_s:  # rank 0's clock decides for every rank
            over = float(main_rank and time.perf_counter() - t_start > args.time_limit_s)
            if all_sum(ranks, np.array([over]))[0] > 0:
                break
        t0, c0 = time.perf_counter(), time.process_time()
        if args.anneal_lr:
            for g in optimizer.param_groups:
                g["lr"] = args.learning_rate * max(0.0, 1.0 - step / args.total_decisions)
        collector.stats.reset()
        counts_before = pool.counts()
        model.eval()
        with weights_frozen():  # no weight changes during the rollout: input layers transposed once
            collector.collect(args.num_steps, learner, pool.act, pool.sample, pool.record)
        model.train()
        n_dec = args.num_envs * args.num_steps  # every rank's games
        step += n_dec
        run_decisions += n_dec
        t_collect = time.perf_counter() - t0

        # --- advantages over the finished transitions ---------------------------------------------
        adv_all, ret_all = compute_gae(buf, args.gamma, args.gae_lambda, args.win_bonus)
        idx = np.flatnonzero(buf.closed[:buf.size])
        n = len(idx)
        if ranks.world > 1:  # one exchange: the learner transitions and the pool's new results, summed
            summed = all_sum(ranks, np.concatenate([[n], (pool.counts() - counts_before).ravel()]))
            n_all = int(summed[0])
            pool.set_counts(counts_before + summed[1:].reshape(-1, 2))
        else:
            n_all = n
        ret_np = ret_all[idx]
        old_v_np = buf.value[idx]
        if args.norm_value:
            vnorm.update(np.concatenate(all_gather(ranks, ret_np)) if ranks.world > 1 else ret_np)
            ret_np = (ret_np - vnorm.mean) / vnorm.std
            old_v_np = (old_v_np - vnorm.mean) / vnorm.std
        obs, mask, state, actions, old_logp, adv, ret, old_v = to_batch(
            device, buf.obs[idx], buf.mask[idx], buf.state[idx] if central else None, buf.action[idx],
            buf.logp[idx], adv_all[idx], ret_np.astype(np.float32), old_v_np.astype(np.float32),
            sparse=(0, 2) if sparse_input else ())

        # --- clipped PPO updates --------------------------------------------------------------------
        clipfracs, kls, pgl, vl, ents = [], [], [], [], []
        for _epoch in range(args.update_epochs):
            perm = torch.from_numpy(update_rng.permutation(n)).to(device)
            for sl in minibatch_slices(n, args.num_minibatches):
                j = perm[sl]
                if len(j) == 0 and ranks.world == 1:
                    continue
                with amp:
                    logits, newv = net(obs[j], mask[j], state[j] if central else None)
                logits, newv = logits.float(), newv.float()
                if len(j) == 0:  # this rank has no rows for this minibatch: it adds nothing to the average
                    loss = 0.0 * (logits.sum() + newv.sum())
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                    optimizer.step()
                    continue
                newlogp, entropy = masked_logp_entropy(logits, mask[j], actions[j])
                logratio = newlogp - old_logp[j]
                ratio = logratio.exp()
                with torch.no_grad():
                    kls.append(float(((ratio - 1) - logratio).mean()))
                    clipfracs.append(float(((ratio - 1.0).abs() > args.clip_coef).float().mean()))
                a = adv[j]
                if args.norm_adv and len(j) > 1:
                    a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                if args.clip_vloss:
                    v_clipped = old_v[j] + (newv - old_v[j]).clamp(-args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newv - ret[j]) ** 2, (v_clipped - ret[j]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newv - ret[j]) ** 2).mean()
                ent = entropy.mean()
                loss = pg_loss - args.ent_coef * ent + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                pgl.append(pg_loss.item())
                vl.append(v_loss.item())
                ents.append(ent.item())
            if args.target_kl:  # the ranks' mean KL: every rank stops at the same epoch
                kl = float(np.mean(kls[-args.num_minibatches:])) if kls else 0.0
                if all_sum(ranks, np.array([kl]))[0] / ranks.world > args.target_kl:
                    break
        var_y = float(np.var(ret_np))
        explained = float("nan") if var_y == 0 else 1.0 - float(np.var(ret_np - old_v_np)) / var_y
        phase_ent = _phase_entropy(buf.phase[idx], model, obs, mask) if main_rank else {}
        collector.after_update()
        update += 1
        if args.check_sync and ranks.world > 1:
            check_in_sync(ranks, model, update)
            sync_checks += 1
        dt = time.perf_counter() - t0
        cpu = max(time.process_time() - c0, 1e-9)
        train_time += dt
        cpu_time += cpu

        # --- snapshots, evaluation, logs, checkpoints ------------------------------------------------
        if args.snapshot_every and update % args.snapshot_every == 0:
            in_use = set().union(*all_gather(ranks, set(collector.opp.tolist())))
            pool.add_snapshot(model, update, in_use)
        done = step >= args.total_decisions
        killed = stop_after_updates is not None and update >= stop_after_updates
        evaluated = main_rank and ((args.eval_every and update % args.eval_every == 0) or done)
        if evaluated:
            last_eval = evaluate()
        metrics = {
            "losses/policy": _mean(pgl), "losses/value": _mean(vl),
            "losses/entropy": _mean(ents), "losses/approx_kl": _mean(kls),
            "losses/clipfrac": _mean(clipfracs), "losses/explained_variance": explained,
            "charts/learning_rate": optimizer.param_groups[0]["lr"],
            "charts/decisions_per_s": n_dec / dt, "charts/learner_transitions_per_s": n_all / dt,
            "charts/decisions_per_cpu_s": n_dec / ranks.world / cpu,
            "charts/collect_share": t_collect / dt, "charts/transitions": n_all,
            "charts/mean_reward": float(buf.reward[idx].mean()) if n else 0.0,
            **collector.stats.summary(), **pool.summary(), **phase_ent,
        }
        if main_rank:
            if evaluated:  # evaluation scalars are logged when they are measured
                metrics.update(last_eval)
            for k, v in metrics.items():
                if not (isinstance(v, float) and math.isnan(v)):
                    writer.add_scalar(k, v, step)
            csv_log.write(step, update, time.perf_counter() - t_start, metrics)
            metrics.update(last_eval)
        if bar is not None:
            bar.update(n_dec)
            post = {"dec/s": f"{n_dec / dt:,.0f}"}
            if "eval/win_share_vs_random" in last_eval:
                post["win"] = f"{100 * last_eval['eval/win_share_vs_random']:.0f}%"
            if "pool/win_rate_vs_pool" in metrics:
                post["pool_win"] = f"{100 * metrics['pool/win_rate_vs_pool']:.0f}%"
            bar.set_postfix(post)
        if done or killed or (args.checkpoint_every and update % args.checkpoint_every == 0):
            checkpoint(ck_path)
        if killed:
            break
    if not killed:  # the run is complete (decision budget reached, or the time limit)
        if step < args.total_decisions:  # stopped by the time limit: evaluate and save where it is
            if main_rank:
                last_eval = evaluate()
                metrics.update(last_eval)
                for k, v in last_eval.items():
                    writer.add_scalar(k, v, step)
            checkpoint(ck_path)
        checkpoint(ck_dir / "final.pt")
    if main_rank:
        writer.flush()
        writer.close()
    if bar is not None:
        bar.close()
    metrics.update({"checkpoint": str(ck_path), "step": step, "update": update, "backend": backend,
                    "world_size": ranks.world, "rank": ranks.rank, "device": str(device),
                    "threads": args.threads, "sync_checks": sync_checks,
                    "train_time_s": train_time, "decisions_per_s_overall": run_decisions / max(train_time, 1e-9),
                    "cpu_time_s": cpu_time,
                    "decisions_per_cpu_s": run_decisions / ranks.world / max(cpu_time, 1e-9)})
    if not killed and main_rank:
        with open(log_dir / "summary.json", "w") as f:
            json.dump({k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}, f, indent=1)
    return metrics


def to_batch(device: torch.device, *arrays: np.ndarray | None, sparse: tuple[int, ...] = ()) -> list:
    """A rollout's arrays as tensors on ``device`` (each moved once per update); the arrays at the
    positions ``sparse`` (network inputs, CPU only) as ``SparseRows``, their nonzero entries."""
    return [None if a is None else SparseRows.of(a) if i in sparse else torch.from_numpy(a).to(device)
            for i, a in enumerate(arrays)]


def _mean(x: list[float]) -> float:
    return float(np.mean(x)) if x else float("nan")


def _phase_entropy(phases: np.ndarray, model: ActorCritic, obs, mask) -> dict[str, float]:
    """Mean policy entropy per decision phase (on at most 512 transitions per phase)."""
    out = {}
    with torch.no_grad():
        for p in np.unique(phases):
            j = torch.from_numpy(np.flatnonzero(phases == p)[:512])
            logits = model.masked_logits(obs[j], mask[j])
            _, ent = masked_logp_entropy(logits, mask[j], logits.argmax(-1))
            out[f"phase/{int(p)}/entropy"] = float(ent.mean())
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
def main(argv: list[str] | None = None) -> dict[str, Any]:
    import argparse
    import sys

    p = argparse.ArgumentParser(
        prog="tarot-train", description="Masked PPO self-play training for the tarot games.",
        epilog="Every Args field can be overridden as key=value (values parsed as YAML), e.g. "
               "seed=3 total_decisions=200000 'hidden=[128,128]'. Several processes: "
               "torchrun --standalone --nproc_per_node=2 -m agents.ppo --config ... (see agents/ppo.py).")
    p.add_argument("--config", default=None, help="YAML config (configs/partita.yaml, configs/smoke.yaml, …)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run from <save_dir>/<run_name>/last.pt exactly where it stopped")
    p.add_argument("overrides", nargs="*", metavar="key=value")
    ns = p.parse_intermixed_args(argv)  # overrides may come before or after --config / --resume
    try:
        args = load_config(ns.config, ns.overrides)
        result = train(args, resume=ns.resume)
    except ValueError as e:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        where = f"rank {os.environ.get('RANK', '0')}/{world}: " if world > 1 else ""
        print(f"tarot-train: error: {where}{e}", file=sys.stderr)
        raise SystemExit(2) from None
    if result.get("rank", 0) == 0:
        keys = ("step", "update", "world_size", "device", "threads", "train_time_s", "decisions_per_s_overall",
                "cpu_time_s", "decisions_per_cpu_s", "eval/margin_vs_random", "eval/margin_ci95",
                "eval/win_share_vs_random", "checkpoint")
        print(json.dumps({k: result[k] for k in keys if k in result}, indent=1))
    return result


def cli() -> None:
    """The ``tarot-train`` console entry point (exit status 0 on success, 2 on bad input)."""
    main()


if __name__ == "__main__":  # python -m agents.ppo (what torchrun starts: -m agents.ppo)
    cli()
