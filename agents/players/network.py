"""The actor-critic network and the masked-distribution maths, shared by training and play.

``ActorCritic`` is the network every PPO checkpoint holds (``agents.training.ppo`` trains it,
``agents.players.policy.build_model`` rebuilds it from a checkpoint's meta, ``NetworkPolicy`` plays it).
Illegal actions get probability exactly zero: ``masked`` puts the most negative float32 on them,
``masked_logp_entropy`` gives log pi(a) and the entropy over the legal actions, ``masked_sample``
draws from the masked softmax. This module depends on torch only (no rules, no trainer), so the
policy side (``agents.players.policy``) and the trainer (``agents.training.ppo``) both import it without a cycle.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn

from .sparse_input import SparseRows, greedy_rows, linear_in

__all__ = [
    "NEG", "ActorCritic", "FrozenActor", "layer", "masked", "masked_logp_entropy", "masked_sample", "mlp", "run_mlp",
]


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


def run_mlp(net: nn.Sequential, x: torch.Tensor | SparseRows) -> torch.Tensor:
    """``net(x)`` for an ``mlp`` whose input may be ``SparseRows``: the first layer through ``linear_in``
    (computed from the nonzero entries on the CPU, ``agents/players/sparse_input.py``), the rest as usual."""
    h = linear_in(net[0], x)
    for m in net[1:]:
        h = m(h)
    return h


class ActorCritic(nn.Module):
    """Actor: MLP on the seat's observation -> one logit per action. Critic: see ``agents.training.ppo.Args.critic``.

    Observations and states may be dense tensors or ``SparseRows`` (the same rows by their nonzero
    entries); either gives the same outputs up to float rounding."""

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
        return masked(self.pi(run_mlp(self.trunk, obs)), mask)

    def forward(self, obs, mask, state=None):
        """(masked logits, value) — the critic reads ``state`` only when it is central."""
        h = run_mlp(self.trunk, obs)
        return masked(self.pi(h), mask), self.value(obs, state, trunk=h)

    def value(self, obs, state=None, trunk: torch.Tensor | None = None) -> torch.Tensor:
        """The critic: each row's expected return for its seat to act, in reward units (``[B]``); ``state`` is
        read only by a central critic; ``trunk``: the actor's hidden output on ``obs`` if already computed."""
        if self.critic_kind == "shared":
            v = self.v(run_mlp(self.trunk, obs) if trunk is None else trunk)
        elif self.critic_kind == "separate":
            v = self.critic_net[1](run_mlp(self.critic_net[0], obs))
        else:
            if state is None:
                raise ValueError("the central critic needs the state")
            v = self.critic_net[1](run_mlp(self.critic_net[0], state))
        return v.squeeze(-1)


class FrozenActor:
    """An ``ActorCritic``'s actor with its weights copied once, for greedy play in a rollout
    (``agents/players/pimc.py``): ``act(obs, mask, live, acts)`` writes every row's most probable legal action
    into ``acts`` in one compiled pass over the engine's sparse observations (``greedy_rows``: the
    layers, ReLUs and masked argmax, float32, no torch call). A row with the same observation and mask as
    an earlier row of the batch takes that row's action without a forward pass (a search's batches repeat
    a seat's view across its worlds and searched actions). The logits equal the torch forward's up to
    float rounding (sums in another order), so the actions are the same but where two legal logits tie
    within rounding. A later change of the model's weights is not seen: make a new one."""

    def __init__(self, model: ActorCritic):
        layers = _actor_layers(model)
        self.params = [t.detach().clone() for m in layers for t in (m.weight, m.bias)]  # (``copies``)
        parts = [np.concatenate([m.weight.detach().float().t().contiguous().numpy().ravel(),
                                 m.bias.detach().float().numpy()]) for m in layers]
        self.flat = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
        self.offs = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(np.int64)
        self.sizes = np.array([layers[0].in_features] + [m.out_features for m in layers], dtype=np.int64)
        width = int(self.sizes[1:].max())
        self.a, self.b = np.zeros(width, np.float32), np.zeros(width, np.float32)
        self.idx = np.zeros(width, np.int64)
        self.hashes, self.table = np.zeros(0, np.int64), np.zeros(1, np.int64)

    def copies(self, model: ActorCritic) -> bool:
        """Whether ``model``'s actor has the weights this one copied (the same layers, equal values): a search
        keeps its rollouts' actor while that holds (``agents/players/pimc.py``), instead of copying them again
        at every decision."""
        if not isinstance(model, ActorCritic):
            return False
        params = [t.detach() for m in _actor_layers(model) for t in (m.weight, m.bias)]
        return len(params) == len(self.params) and all(
            p.device.type == "cpu" and p.dtype == q.dtype and p.shape == q.shape and torch.equal(p, q)
            for p, q in zip(params, self.params))

    def act(self, obs, mask: np.ndarray, live: np.ndarray, acts: np.ndarray) -> None:
        """``acts[r]``: row ``r``'s greedy action where it is ``live`` with two legal actions or more, else
        its first legal one; ``obs`` the batched engine's sparse observations (``obs_format="sparse"``)."""
        if obs.size != self.sizes[0]:
            raise ValueError(f"observations are {obs.size} wide, the actor expects {self.sizes[0]}")
        if len(self.hashes) != len(mask):  # scratch of the row de-duplication (greedy_rows)
            self.hashes = np.zeros(len(mask), np.int64)
            self.table = np.zeros(1 << (2 * len(mask)).bit_length(), np.int64)
        greedy_rows(obs.cols, obs.vals, obs.counts, mask, live, self.flat, self.offs, self.sizes,
                    self.a, self.b, self.idx, self.hashes, self.table, acts)


def _actor_layers(model: ActorCritic) -> list[nn.Linear]:
    """The actor's linear layers, input first: the trunk's, then the policy head."""
    return [m for m in model.trunk if isinstance(m, nn.Linear)] + [model.pi]


NEG = torch.finfo(torch.float32).min


def masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Illegal actions get the most negative float32: probability exactly 0 after the softmax. (In
    float32 also under ``amp``: in bfloat16 that value would round to -inf, and 0 * -inf gives NaN
    gradients in the entropy.)"""
    return logits.float().masked_fill(~mask, NEG)


def masked_logp_entropy(logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor):
    """log pi(a) and the entropy over the legal actions of masked ``logits``."""
    logp_all = torch.log_softmax(logits, dim=-1)
    p = logp_all.exp()
    ent = -torch.where(mask, p * logp_all, torch.zeros_like(p)).sum(-1)
    return logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1), ent


def masked_sample(logits: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Sample from the masked softmax (illegal actions have probability 0, never drawn)."""
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen).squeeze(-1)
