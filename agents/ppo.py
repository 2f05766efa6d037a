"""Masked PPO self-play for the tarot games (CleanRL-style: one readable file).

One policy plays every seat (observations are seat-relative, partners share rewards) and every
decision type (discards, declarations, signals, cards) through one flat action space; illegal
actions get probability zero (masked logits) and the entropy is over the legal actions only.

    python scripts/train.py --config configs/partita.yaml total_decisions=2000000 seed=3
    tarot-train --config configs/partita.yaml --resume

Pieces, top to bottom: ``Args`` (every hyperparameter, documented), ``ActorCritic`` (the network),
``masked_*`` helpers (the maths the tests check by hand), ``OpponentPool`` (self-play against
frozen snapshots and fixed policies), ``train(args)`` (collect → GAE → clipped updates → log →
evaluate → checkpoint).
"""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import random
import time
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

import tarot_env

from .evaluate import duplicate_eval
from .policy import NetworkPolicy, Policy, RandomPolicy, load_checkpoint, load_policy, save_checkpoint
from .rollout import SELF, Collector, VecCollector, compute_gae, make_spec, vec_available


# ==================================================================================================
# Hyperparameters
# ==================================================================================================
@dataclass
class Args:
    # --- the game -----------------------------------------------------------------------------
    game: str = "partita"
    """which game: a key of ``tarot_env.ENV_IDS`` (partita, ottocento, millone)"""
    game_options: dict = field(default_factory=dict)
    """rules and env options, as for ``pettingzoo.make`` (e.g. ``{deals_per_game: 4, reward_scale: 80}``)"""
    # --- run ----------------------------------------------------------------------------------
    seed: int = 1
    """one seed reproduces the run (on CPU, with the same number of threads)"""
    total_decisions: int = 5_000_000
    """stop after this many decisions (all seats, learner and opponents)"""
    time_limit_s: float = 0.0
    """also stop after this many seconds of training (0 = no limit; a time limit is not reproducible)"""
    threads: int = 1
    """torch intra-op threads (the machine's cores are shared; 1 keeps runs reproducible and polite)"""
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
    """checkpoint paths of fixed opponents for the pool (same game)"""
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
                    "threads", "eval_deals")
        for k in positive:
            if getattr(self, k) < 1:
                raise ValueError(f"config key {k!r} must be at least 1 (got {getattr(self, k)})")
        if not 0.0 <= self.self_play_prob <= 1.0:
            raise ValueError(f"config key 'self_play_prob' must be in [0, 1] (got {self.self_play_prob})")
        if not self.hidden or not all(isinstance(h, int) and h > 0 for h in self.hidden):
            raise ValueError(f"config key 'hidden' must be a non-empty list of positive ints (got {self.hidden})")
        if self.self_play_prob < 1.0 and not (self.pool_random or self.pool_fixed or self.snapshot_every):
            raise ValueError("the opponent pool would stay empty: set pool_random, pool_fixed or "
                             "snapshot_every, or self_play_prob=1")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Args":
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


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> Args:
    """``Args`` from a YAML file plus ``key=value`` overrides (values parsed as YAML)."""
    import yaml

    d: dict[str, Any] = {}
    if path is not None:
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


# ==================================================================================================
# Network and the masked-distribution maths
# ==================================================================================================
def layer(i: int, o: int, std: float = math.sqrt(2)) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.zeros_(lin.bias)
    return lin


def mlp(sizes: list[int]) -> nn.Sequential:
    mods: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        mods += [layer(a, b), nn.ReLU()]
    return nn.Sequential(*mods)


class ActorCritic(nn.Module):
    """Actor: MLP on the seat's observation -> one logit per action. Critic: see ``Args.critic``."""

    def __init__(self, obs_size: int, num_actions: int, hidden: list[int], critic: str = "shared",
                 state_size: int | None = None):
        super().__init__()
        self.critic_kind = critic
        self.trunk = mlp([obs_size, *hidden])
        self.pi = layer(hidden[-1], num_actions, std=0.01)
        if critic == "shared":
            self.v = layer(hidden[-1], 1, std=1.0)
        else:
            cin = state_size if critic == "central" else obs_size
            self.critic_net = nn.Sequential(mlp([cin, *hidden]), layer(hidden[-1], 1, std=1.0))

    def masked_logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The actor: only ``obs`` (never the state) goes in."""
        return masked(self.pi(self.trunk(obs)), mask)

    def forward(self, obs, mask, state=None):
        """(masked logits, value) — the critic reads ``state`` only when it is central."""
        h = self.trunk(obs)
        logits = masked(self.pi(h), mask)
        if self.critic_kind == "shared":
            v = self.v(h)
        elif self.critic_kind == "separate":
            v = self.critic_net(obs)
        else:
            if state is None:
                raise ValueError("the central critic needs the state")
            v = self.critic_net(state)
        return logits, v.squeeze(-1)


NEG = torch.finfo(torch.float32).min


def masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Illegal actions get the most negative float: probability exactly 0 after the softmax."""
    return logits.masked_fill(~mask, NEG)


def masked_logp_entropy(logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor):
    """log pi(a) and the entropy over the legal actions of masked ``logits``."""
    logp_all = torch.log_softmax(logits, dim=-1)
    p = logp_all.exp()
    ent = -torch.where(mask, p * logp_all, torch.zeros_like(p)).sum(-1)
    return logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1), ent


def masked_sample(logits: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Sample from the masked softmax (illegal actions have probability 0, never drawn)."""
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen).squeeze(-1)


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
    they end.
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
            self._add({"name": f"fixed:{p}", "kind": "fixed", "path": p}, load_policy(p, spec.name, greedy=False))

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
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
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

    def state_dict(self) -> dict:
        rand = [p for p in self.policies.values() if isinstance(p, RandomPolicy)]
        return {"entries": [dict(e) for e in self.entries], "retired": [dict(e) for e in self.retired],
                "next_uid": self.next_uid, "rng": json.dumps(self.rng.bit_generator.state),
                "gen": self.gen.get_state(), "random_rng": [json.dumps(p.rng.bit_generator.state) for p in rand]}

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
                    pol = load_policy(e["path"], self.spec.name, greedy=False)
                target.append(e)
                self.policies[e["uid"]] = pol
        self.next_uid = int(d["next_uid"])
        self.rng.bit_generator.state = json.loads(d["rng"])
        self.gen.set_state(d["gen"])
        rand = [p for p in self.policies.values() if isinstance(p, RandomPolicy)]
        for p, st in zip(rand, d["random_rng"]):
            p.rng.bit_generator.state = json.loads(st)

    def summary(self) -> dict[str, float]:
        return {f"pool/win_rate_vs/{e['name']}": (e["wins"] + 1.0) / (e["games"] + 2.0)
                for e in self.entries if e["kind"] != "snapshot"}


# ==================================================================================================
# Training
# ==================================================================================================
def run_paths(args: Args) -> tuple[Path, Path]:
    name = args.run_name or f"{args.game}_s{args.seed}"
    return Path(args.log_dir) / name, Path(args.save_dir) / name


def train(args: Args, resume: bool = False, stop_after_updates: int | None = None) -> dict[str, Any]:
    """Train with PPO self-play; returns the last metrics (and the checkpoint path under "checkpoint").

    ``resume`` continues from ``<save_dir>/<run_name>/last.pt`` exactly where it stopped (the
    checkpoint's config is used, only ``total_decisions``, ``time_limit_s`` and ``progress`` may
    change). ``stop_after_updates`` simulates a killed run (tests): stop after that many updates,
    right after the checkpoint of that update.
    """
    log_dir, ck_dir = run_paths(args)
    ck_path = ck_dir / "last.pt"
    ck = None
    if not resume and ck_path.exists() and not args.overwrite:
        raise ValueError(f"run {str(ck_dir)!r} already has a checkpoint: pass --resume to continue it, "
                         f"overwrite=true to start it again, or another run_name")
    if resume:
        ck = load_checkpoint(ck_path, args.game)
        saved = Args.from_dict(ck["meta"]["config"])
        changed = {k for k in _FIELD_TYPES if getattr(saved, k) != getattr(args, k)}
        changed -= {"total_decisions", "time_limit_s", "progress", "checkpoint_every", "run_name", "overwrite"}
        if changed:
            print(f"resume: keeping the checkpoint's values of {sorted(changed)}")
        args = dataclasses.replace(saved, total_decisions=args.total_decisions,
                                   time_limit_s=args.time_limit_s, progress=args.progress,
                                   checkpoint_every=args.checkpoint_every)

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed % 2**32)
    torch.manual_seed(args.seed)
    spec = make_spec(args.game, args.game_options)
    central = args.critic == "central"
    model = ActorCritic(spec.obs_size, spec.num_actions, args.hidden, args.critic, spec.state_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    vnorm = RunningNorm()
    sample_gen = torch.Generator().manual_seed(args.seed)
    update_rng = np.random.default_rng(args.seed + 7)
    pool = OpponentPool(args, spec, args.seed + 11)
    P = spec.num_players
    capacity = args.num_envs * (args.num_steps + P)
    backend = args.backend
    if backend == "auto":
        backend = "vec" if vec_available(spec.name) else "rules"
    if ck is not None:
        backend = ck["meta"].get("backend", backend)  # the resolved backend of the run being resumed
    if backend == "vec" and not vec_available(spec.name):
        raise ValueError(f"backend 'vec': tarot_env has no batched engine for {spec.name!r}; use 'rules' or 'auto'")
    Coll = VecCollector if backend == "vec" else Collector
    collector = Coll(spec, args.num_envs, capacity, args.seed + 3, use_state=central)
    update, step = 0, 0
    last_eval: dict[str, float] = {}
    if ck is not None:
        try:  # everything is restored into fresh objects; a failure leaves nothing half-loaded on disk
            model.load_state_dict(ck["model"])
            optimizer.load_state_dict(ck["optimizer"])
            vnorm.load_state_dict(ck["value_norm"])
            sample_gen.set_state(ck["rng"]["sample"])
            update_rng.bit_generator.state = json.loads(ck["rng"]["update"])
            pool.load_state_dict(ck["pool"])
            collector.load_state_dict(ck["collector"])
            torch.set_rng_state(ck["rng"]["torch"])
            np.random.set_state(_np_state_from(ck["rng"]["numpy_global"]))
            random.setstate(_py_state_from(ck["rng"]["python"]))
            update, step = int(ck["meta"]["update"]), int(ck["meta"]["step"])
            last_eval = dict(ck.get("stats", {}).get("last_eval", {}))
        except (KeyError, TypeError, RuntimeError, ValueError, IndexError, AttributeError) as e:
            raise ValueError(f"checkpoint {str(ck_path)!r} cannot be resumed: {type(e).__name__}: {e}") from None
    else:
        collector.start(pool.sample)

    def checkpoint(path: Path) -> None:
        save_checkpoint(path, {
            "meta": {"game": spec.name, "env_id": spec.env_id, "env_version": spec.version,
                     "obs_size": spec.obs_size, "state_size": spec.state_size,
                     "num_actions": spec.num_actions, "config": args.to_dict(), "update": update,
                     "step": step, "backend": backend, "tarot_env_version": tarot_env.__version__,
                     "torch_version": str(torch.__version__)},
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "value_norm": vnorm.state_dict(),
            "rng": {"sample": sample_gen.get_state(), "update": json.dumps(update_rng.bit_generator.state),
                    "torch": torch.get_rng_state(), "numpy_global": _np_state_to(np.random.get_state()),
                    "python": _py_state_to(random.getstate())},
            "pool": pool.state_dict(), "collector": collector.state_dict(),
            "stats": {"last_eval": last_eval},
        })

    writer = _writer(log_dir, purge_step=step if resume else None)
    csv_log = _CsvLog(log_dir / "progress.csv", keep_until=step if resume else None)
    bar = _progress(args, step)

    @torch.no_grad()
    def learner(obs: np.ndarray, mask: np.ndarray, state):
        logits, v = model(torch.from_numpy(obs), torch.from_numpy(mask),
                          torch.from_numpy(state) if state is not None else None)
        a = masked_sample(logits, sample_gen)
        logp = torch.log_softmax(logits, -1).gather(-1, a.unsqueeze(-1)).squeeze(-1)
        v = v.numpy()
        if args.norm_value:
            v = v * vnorm.std + vnorm.mean
        return a.numpy(), logp.numpy(), v

    def evaluate() -> dict[str, float]:
        pol = NetworkPolicy(model, greedy=args.eval_greedy, seed=args.eval_seed)
        r = duplicate_eval(spec, pol, None, args.eval_deals, args.eval_seed)
        model.train()
        return {"eval/margin_vs_random": r.mean_margin, "eval/margin_ci95": r.ci95,
                "eval/win_share_vs_random": r.win_share, "eval/tie_share_vs_random": r.tie_share}

    t_start = time.perf_counter()
    train_time = cpu_time = 0.0
    run_decisions = 0  # decisions made by this process (not counting those before a resume)
    metrics: dict[str, float] = {}
    buf = collector.buf
    killed = False
    while step < args.total_decisions:
        if args.time_limit_s and time.perf_counter() - t_start > args.time_limit_s:
            break
        t0, c0 = time.perf_counter(), time.process_time()
        if args.anneal_lr:
            for g in optimizer.param_groups:
                g["lr"] = args.learning_rate * max(0.0, 1.0 - step / args.total_decisions)
        collector.stats.reset()
        model.eval()
        n_dec = collector.collect(args.num_steps, learner, pool.act, pool.sample, pool.record)
        model.train()
        step += n_dec
        run_decisions += n_dec
        t_collect = time.perf_counter() - t0

        # --- advantages over the finished transitions ---------------------------------------------
        adv_all, ret_all = compute_gae(buf, args.gamma, args.gae_lambda)
        idx = np.flatnonzero(buf.closed[:buf.size])
        obs = torch.from_numpy(buf.obs[idx])
        mask = torch.from_numpy(buf.mask[idx])
        state = torch.from_numpy(buf.state[idx]) if central else None
        actions = torch.from_numpy(buf.action[idx])
        old_logp = torch.from_numpy(buf.logp[idx])
        adv = torch.from_numpy(adv_all[idx])
        ret_np = ret_all[idx]
        old_v_np = buf.value[idx]
        if args.norm_value:
            vnorm.update(ret_np)
            ret_np = (ret_np - vnorm.mean) / vnorm.std
            old_v_np = (old_v_np - vnorm.mean) / vnorm.std
        ret = torch.from_numpy(ret_np.astype(np.float32))
        old_v = torch.from_numpy(old_v_np.astype(np.float32))

        # --- clipped PPO updates --------------------------------------------------------------------
        n = len(idx)
        mb = max(1, math.ceil(n / args.num_minibatches))
        clipfracs, kls, pgl, vl, ents = [], [], [], [], []
        for _epoch in range(args.update_epochs):
            perm = torch.from_numpy(update_rng.permutation(n))
            for start in range(0, n, mb):
                j = perm[start:start + mb]
                logits, newv = model(obs[j], mask[j], state[j] if central else None)
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
                pgl.append(pg_loss.item()); vl.append(v_loss.item()); ents.append(ent.item())
            if args.target_kl and np.mean(kls[-args.num_minibatches:]) > args.target_kl:
                break
        var_y = float(np.var(ret_np))
        explained = float("nan") if var_y == 0 else 1.0 - float(np.var(ret_np - old_v_np)) / var_y
        phase_ent = _phase_entropy(buf.phase[idx], model, obs, mask)
        collector.after_update()
        update += 1
        dt = time.perf_counter() - t0
        cpu = max(time.process_time() - c0, 1e-9)
        train_time += dt
        cpu_time += cpu

        # --- snapshots, evaluation, logs, checkpoints ------------------------------------------------
        if args.snapshot_every and update % args.snapshot_every == 0:
            pool.add_snapshot(model, update, set(collector.opp.tolist()))
        done = step >= args.total_decisions
        killed = stop_after_updates is not None and update >= stop_after_updates
        evaluated = (args.eval_every and update % args.eval_every == 0) or done
        if evaluated:
            last_eval = evaluate()
        metrics = {
            "losses/policy": float(np.mean(pgl)), "losses/value": float(np.mean(vl)),
            "losses/entropy": float(np.mean(ents)), "losses/approx_kl": float(np.mean(kls)),
            "losses/clipfrac": float(np.mean(clipfracs)), "losses/explained_variance": explained,
            "charts/learning_rate": optimizer.param_groups[0]["lr"],
            "charts/decisions_per_s": n_dec / dt, "charts/learner_transitions_per_s": n / dt,
            "charts/decisions_per_cpu_s": n_dec / cpu,
            "charts/collect_share": t_collect / dt, "charts/transitions": n,
            "charts/mean_reward": float(buf.reward[idx].mean()) if n else 0.0,
            **collector.stats.summary(), **pool.summary(), **phase_ent,
        }
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
            last_eval = evaluate()
            metrics.update(last_eval)
            for k, v in last_eval.items():
                writer.add_scalar(k, v, step)
            checkpoint(ck_path)
        checkpoint(ck_dir / "final.pt")
    writer.flush()
    writer.close()
    if bar is not None:
        bar.close()
    metrics.update({"checkpoint": str(ck_path), "step": step, "update": update, "backend": backend,
                    "train_time_s": train_time, "decisions_per_s_overall": run_decisions / max(train_time, 1e-9),
                    "cpu_time_s": cpu_time, "decisions_per_cpu_s": run_decisions / max(cpu_time, 1e-9)})
    if not killed:
        with open(log_dir / "summary.json", "w") as f:
            json.dump({k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}, f, indent=1)
    return metrics


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
            "phase/DISCARD/card_points_kept"]

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
               "seed=3 total_decisions=200000 'hidden=[128,128]'.")
    p.add_argument("--config", default=None, help="YAML config (configs/partita.yaml, configs/smoke.yaml, …)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run from <save_dir>/<run_name>/last.pt exactly where it stopped")
    p.add_argument("overrides", nargs="*", metavar="key=value")
    ns = p.parse_args(argv)
    try:
        args = load_config(ns.config, ns.overrides)
        result = train(args, resume=ns.resume)
    except ValueError as e:
        print(f"tarot-train: error: {e}", file=sys.stderr)
        raise SystemExit(2)
    keys = ("step", "update", "train_time_s", "decisions_per_s_overall", "cpu_time_s", "decisions_per_cpu_s",
            "eval/margin_vs_random",
            "eval/margin_ci95", "eval/win_share_vs_random", "checkpoint")
    print(json.dumps({k: result[k] for k in keys if k in result}, indent=1))
    return result


def cli() -> None:
    """The ``tarot-train`` console entry point (exit status 0 on success, 2 on bad input)."""
    main()
