"""The generic part of the batched (vectorised) self-play engines.

A batched engine keeps ``num_envs`` games as arrays with the batch axis first (pgx style). The per-card
state of every game is one boolean block per row, laid out exactly like the reference rules object's
``block`` (``TrickGame.block_fields()``: ``hands``, ``played``, ``trick_by``, ``won``, ``discards``,
``signal_table`` and the game's extra fields), so the reference's observation gather table
(``_OBS_GATHER[seat]``) says where each block cell appears in each seat's observation.

:class:`BlockMirror` uses that table to keep, next to the block, the card sections of *every* seat's
observation up to date incrementally: writing block cell ``k`` of row ``b`` also writes the (at most
four) observation positions that show it. Returning the acting seat's observation is then one
contiguous row copy per game plus a handful of scalar features; no per-step gather.

:class:`VecEnv` is the public base class (``reset``, ``step`` with action validation, ``state``) and
:class:`VecStep` the result of a step. A game's engine (``tarot_env.vector.partita``) subclasses it and
implements the rules as boolean algebra over precomputed card tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import EnvConfig, make_config, split_options
from ..engine import TrickGame


@dataclass
class VecStep:
    """What a batched step (or reset) returns; every array has the batch axis first.

    ``seat``          int64[B]: the seat to act in each game (after auto-reset for finished games)
    ``obs``           float32[B, OBS]: that seat's observation (identical to the AEC ``observe``)
    ``mask``          bool[B, A]: its legal actions (the AEC ``action_mask``, as bool)
    ``rewards``       float64[B, P]: reward each seat received since its own last decision (the AEC
                      env's ``_cumulative_rewards``, i.e. what ``env.last()`` reports for that seat);
                      for a finished game these are the final rewards of that game
    ``step_rewards``  float64[B, P]: rewards produced by this step alone (the AEC ``env.rewards``)
    ``done``          bool[B]: the episode of that row ended at this step (game, or deal with
                      ``episode="deal"``); the row has already been reset and ``seat/obs/mask`` show
                      the first decision of the next episode
    ``info``          dict of arrays with the final information of finished rows (valid where
                      ``done``); ``VecEnv.final_info(b)`` gives row ``b``'s as the AEC dict

    By default the arrays are the engine's own buffers, overwritten by the next call: copy what you
    keep (``make_vec(..., copy_outputs=True)`` returns fresh arrays instead).
    """

    seat: np.ndarray
    obs: np.ndarray
    mask: np.ndarray
    rewards: np.ndarray
    step_rewards: np.ndarray
    done: np.ndarray
    info: dict[str, np.ndarray] = field(default_factory=dict)


def row_seeds(seed: int | None, num_envs: int) -> list[int]:
    """Per-row integer seeds: row ``i`` plays exactly ``Game(config, seed=row_seeds(seed, n)[i])``.

    Drawn from ``np.random.SeedSequence(seed)``, so row ``i``'s seed does not depend on ``num_envs``
    (a batch of 8 is the first 8 rows of a batch of 16) and nearby seeds give unrelated batches.
    """
    words = np.random.SeedSequence(seed).generate_state(num_envs, dtype=np.uint64)
    return [int(w) >> 1 for w in words]  # 63-bit ints, like next_game's rng.integers(2**63)


class BlockMirror:
    """Boolean state blocks ``[B, BLOCK]`` plus every seat's observation card sections ``[B, P, OBS]``.

    ``obs_gather[seat]`` is the reference game's gather table (block positions of the card sections of
    ``seat``'s observation, which come first in the observation). ``flat[k]`` lists, for block cell
    ``k``, the position of that cell in each seat's slice of the flattened observation buffer; cells a
    seat does not see point at the last scalar slot of that seat's observation (a scratch slot that the
    scalar encoder overwrites before any observation is returned).
    """

    def __init__(self, Game: type[TrickGame], obs_gather, num_envs: int):
        P, OW = Game.num_players, Game.OBS.size
        BS = Game.block_size()
        gathered = len(obs_gather[0])
        self.B, self.P, self.OW, self.BS, self.gathered = num_envs, P, OW, BS, gathered
        inv = np.full((P, BS), -1, dtype=np.int64)
        for v in range(P):
            g = np.asarray(obs_gather[v])
            assert len(np.unique(g)) == len(g), "a block cell may appear once per observation"
            inv[v, g] = np.arange(len(g))
        scratch = OW - 1
        assert scratch >= gathered, "the observation must end with at least one scalar feature"
        self.flat = (np.arange(P)[None, :] * OW + np.where(inv.T >= 0, inv.T, scratch)).astype(np.int64)
        self.block = np.zeros((num_envs, BS), dtype=bool)
        self.obs = np.zeros((num_envs, P, OW), dtype=np.float32)
        self._bflat = self.block.reshape(-1)
        self._oflat = self.obs.reshape(-1)
        self.row_block = np.arange(num_envs, dtype=np.int64) * BS
        self.row_obs = np.arange(num_envs, dtype=np.int64) * (P * OW)
        self.views = Game.block_index()  # block positions of every field, for the rules code

    def view(self, name: str) -> np.ndarray:
        """A ``[B, *shape]`` view of block field ``name`` (no copy)."""
        ix = getattr(self.views, name)
        start, shape = int(ix.flat[0]), ix.shape
        v = self.block[:, start:start + ix.size].reshape((self.B,) + shape)
        assert np.shares_memory(v, self.block)
        return v

    def write(self, rows: np.ndarray, cells: np.ndarray, value: bool) -> None:
        """Set block cells ``cells`` (int[n] or int[n, m], block positions) of ``rows`` (int[n])."""
        rb = rows if cells.ndim == 1 else rows[:, None]
        self._bflat[(self.row_block[rb] + cells).ravel()] = value
        self._oflat[((self.row_obs[rb])[..., None] + self.flat[cells]).ravel()] = value

    def clear_rows(self, rows: np.ndarray) -> None:
        self.block[rows] = False
        self.obs[rows] = 0.0

    def gather_obs(self, seat: np.ndarray, out: np.ndarray) -> None:
        """Copy each row's ``seat`` observation (card sections; scalars still to be written) into out."""
        np.take(self.obs.reshape(self.B * self.P, self.OW), self.row_seat_index(seat), axis=0, out=out)

    def row_seat_index(self, seat: np.ndarray) -> np.ndarray:
        return np.arange(self.B, dtype=np.int64) * self.P + seat


class VecEnv:
    """Base class of the batched engines: ``num_envs`` games of one kind stepped in lockstep.

    Subclasses set ``Game`` (the reference rules class, whose ``Config`` and layouts they share) and
    implement ``_reset_all``, ``_apply`` (one action per row), ``_encode`` (acting seats'
    observations and masks) and ``state``.
    """

    Game: type[TrickGame]

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 **options: Any):
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        game_opts, env_opts = split_options(options, self.Game.Config, EnvConfig)
        self.config = make_config(self.Game.Config, game_opts)
        self.env_config: EnvConfig = make_config(EnvConfig, env_opts)
        if self.env_config.illegal_action != "raise":
            raise ValueError("the batched engine supports illegal_action='raise' only (step validates "
                             "the actions against the masks and raises ValueError); got "
                             f"{self.env_config.illegal_action!r}")
        self.num_envs = B = int(num_envs)
        self.num_players = self.Game.num_players
        self.num_actions = self.Game.num_actions
        self.obs_size = self.Game.OBS.size
        self.state_size = self.Game.STATE.size
        self.copy_outputs = copy_outputs
        self.seed = seed
        self.row_seeds = row_seeds(seed, B)
        self._ar = np.arange(B, dtype=np.int64)
        self._seat = np.zeros(B, dtype=np.int64)
        self._obs = np.zeros((B, self.obs_size), dtype=np.float32)
        self._mask = np.zeros((B, self.num_actions), dtype=bool)
        self._cum = np.zeros((B, self.num_players), dtype=np.float64)
        self._step_rew = np.zeros((B, self.num_players), dtype=np.float64)
        self._out_rew = np.zeros((B, self.num_players), dtype=np.float64)
        self._done = np.zeros(B, dtype=bool)
        self._ready = False

    # --- public API ---------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> VecStep:
        """Start every row afresh (row i from ``row_seeds[i]``; a new ``seed`` replaces the seeds)."""
        if seed is not None:
            self.seed = seed
            self.row_seeds = row_seeds(seed, self.num_envs)
        self._reset_all()
        self._cum[:] = 0.0
        self._step_rew[:] = 0.0
        self._out_rew[:] = 0.0
        self._done[:] = False
        self._ready = True
        self._encode()
        return self._result()

    def step(self, actions, validate: bool = True) -> VecStep:
        """Apply one action per row (``actions``: ints of shape ``[B]``) for the seat to act.

        With ``validate`` (default) every action is checked against the row's mask first; if any is
        illegal a ``ValueError`` names the rows, the actions and the legal ones, and nothing changes.
        ``validate=False`` skips the check (for drivers that sample from the mask).
        """
        if not self._ready:
            raise ValueError("call reset() before step()")
        a = np.asarray(actions)
        if validate:
            a = self._check(a)
        elif a.dtype != np.int64:
            a = a.astype(np.int64)
        self._cum[self._ar, self._seat] = 0.0  # the acting seat collects from now on
        self._step_rew[:] = 0.0
        self._done[:] = False
        self._apply(a)
        self._cum += self._step_rew
        self._out_rew[:] = self._cum
        if self._done.any():
            self._cum[self._done] = 0.0  # the next episode starts with nothing collected
        self._encode()
        return self._result()

    def state(self) -> np.ndarray:
        """float32[B, STATE]: the full-information state of every row (centralised critics only)."""
        raise NotImplementedError

    def final_info(self, row: int) -> dict[str, Any]:
        """The AEC env's final ``infos[agent]`` of row ``row``'s last finished episode."""
        raise NotImplementedError

    def action_name(self, action: int) -> str:
        return self.Game.action_name(int(action))

    # --- helpers ------------------------------------------------------------------------------------
    def _check(self, a: np.ndarray) -> np.ndarray:
        B, A = self.num_envs, self.num_actions
        if a.shape != (B,):
            raise ValueError(f"actions must have shape ({B},), one per game; got shape {a.shape}")
        if a.dtype.kind not in "iu":
            if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
                a = a.astype(np.int64)
            else:
                raise ValueError(f"actions must be integer action ids 0..{A - 1}; got dtype {a.dtype}")
        a = a.astype(np.int64, copy=False)
        inr = (a >= 0) & (a < A)
        ok = inr.copy()
        ok[inr] = self._mask[self._ar[inr], a[inr]]
        if not ok.all():
            bad = np.flatnonzero(~ok)
            parts = []
            for b in bad[:5]:
                legal = ", ".join(f"{x}={self.action_name(x)}" for x in np.flatnonzero(self._mask[b]))
                what = (f"{int(a[b])} ({self.action_name(a[b])})" if inr[b]
                        else f"{int(a[b])} (out of range 0..{A - 1})")
                parts.append(f"row {int(b)}: seat {int(self._seat[b])} action {what}; legal: {legal}")
            more = f" (and {len(bad) - 5} more rows)" if len(bad) > 5 else ""
            raise ValueError(f"illegal actions in {len(bad)} of {B} {self.Game.name} games, nothing "
                             f"was applied{more}: " + " | ".join(parts))
        return a

    def _result(self) -> VecStep:
        c = (lambda x: x.copy()) if self.copy_outputs else (lambda x: x)
        return VecStep(seat=c(self._seat), obs=c(self._obs), mask=c(self._mask), rewards=c(self._out_rew),
                       step_rewards=c(self._step_rew), done=c(self._done),
                       info={k: c(v) for k, v in self._info_arrays().items()})

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {}

    def _reset_all(self) -> None:
        raise NotImplementedError

    def _apply(self, a: np.ndarray) -> None:
        raise NotImplementedError

    def _encode(self) -> None:
        raise NotImplementedError
