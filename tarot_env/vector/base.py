"""The generic part of the batched engines (docs/batched.md): :class:`VecEnv`, the public base class
(``reset``, ``step`` with action validation, ``state``, ``final_info``, ``load_games``, checkpoints),
:class:`VecStep`, the result of a step.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np

from ..checks import check_seed
from ..config import game_and_env_configs
from ..engine import TrickGame
from ..rewards import final_info, game_rewards
from .sparse import OBS_FORMATS, SparseObs, check_counts, from_dense, sparse_buffers

NOT_OVER = -2  # final_winner of an episode that ended with the game still going (episode="deal")


@dataclass
class VecStep:
    """What a batched step (or reset) returns; every array has the batch axis first.

    ``seat``          int64[B]: the seat to act in each game (after auto-reset for finished games)
    ``obs``           float32[B, OBS]: that seat's observation (identical to the AEC ``observe``); an
                      empty ``[B, 0]`` array with ``observe=False`` (masks only); with
                      ``obs_format="sparse"`` a :class:`~tarot_env.vector.sparse.SparseObs` of the same rows
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


# --- card sets as bit sets (one uint64 per set: bit c = card c, packs of up to 64 cards) -------------
assert sys.byteorder == "little", "card sets are packed into uint64 byte by byte"


def pack_cards(cards: np.ndarray) -> np.ndarray:
    """bool[..., n] card sets (n <= 64) -> uint64[...]."""
    cards = np.asarray(cards, dtype=bool)
    packed = np.zeros(cards.shape[:-1] + (8,), dtype=np.uint8)
    packed[..., :(cards.shape[-1] + 7) // 8] = np.packbits(cards, axis=-1, bitorder="little")
    return packed.view(np.uint64)[..., 0]


def unpack_cards(bits: np.ndarray, n: int) -> np.ndarray:
    """uint64[...] card sets -> bool[..., n]."""
    b = np.asarray(bits, dtype=np.uint64)
    flat = np.unpackbits(np.ascontiguousarray(b.reshape(-1)).view(np.uint8).reshape(-1, 8), axis=1, count=n,
                         bitorder="little")
    return flat.view(bool).reshape(b.shape + (n,))


class Rows:
    """The declared state of ``B`` games of one game (``PartitaRows``, ``MilloneRows``, ``OttocentoRows``):
    one array per name of ``ARRAYS`` (the fields of the kernels' ``State`` tuple and each row's random
    stream, :mod:`tarot_env.vector.pcg`; batch axis first), as attributes of those names. ``s`` is the
    ``State`` tuple the kernels take, ``streams`` the rows' streams. A subclass declares ``State`` and
    ``ARRAYS``, allocates the arrays (``_alloc``), names the attributes a copy shares (``SHARED``: the
    options) and sets up what else a new state holds (``_extras_from``: scratch arrays, records, caches)."""

    State: ClassVar[type]
    ARRAYS: ClassVar[tuple[str, ...]]
    SHARED: ClassVar[tuple[str, ...]] = ()

    def _bind(self) -> None:
        """The kernels' view of the arrays (``s``) and the streams' (``streams``)."""
        from .pcg import Streams

        self.s = self.State(*(getattr(self, f) for f in self.State._fields))
        self.streams = Streams(self.rng_state, self.rng_inc, self.rng_half)

    def arrays(self) -> dict[str, np.ndarray]:
        """The state's arrays by name (``ARRAYS``)."""
        return {f: getattr(self, f) for f in self.ARRAYS}

    def copy(self):
        """A copy of every row (a one-row game's clone)."""
        return self._derived(np.copy, None)

    def take(self, index: np.ndarray):
        """A new state whose row ``i`` is a copy of row ``index[i]`` (``ndarray.take``: on these many small
        arrays about twice as fast as fancy indexing)."""
        index = np.asarray(index, dtype=np.int64)
        return self._derived(lambda v: v.take(index, axis=0), index)

    def tiled(self, n: int, row: int = 0):
        """``n`` copies of row ``row`` (a search's worlds start as copies of the real game's row)."""
        return self.take(np.full(n, row, dtype=np.int64))

    def _derived(self, rows_of, index: np.ndarray | None):
        new = object.__new__(type(self))
        to, old = new.__dict__, self.__dict__  # (the arrays and the shared attributes are plain attributes)
        for k in self.SHARED:
            to[k] = old[k]
        for k in self.ARRAYS:
            to[k] = rows_of(old[k])
        new._extras_from(self, rows_of, index)
        new._bind()
        return new

    def _extras_from(self, old: Rows, rows_of, index: np.ndarray | None) -> None:
        """What a copy of ``old`` (``index`` None) or a selection of its rows holds besides the arrays
        (``rows_of``: an array of ``old``'s to this state's rows)."""


# what get_state leaves out: make_vec's obs_format (a state saved in one format loads into the other), the last
# step's statistics, and what is rebuilt from the arrays or kept across set_state (the kernels' State tuple and
# streams, Partita's views, the kernels' scratch and step buffers, the caches that check their keys)
_UNSAVED = frozenset(("obs_format", "sparse", "sparse_width", "_sp_cols", "_sp_vals", "_sp_counts", "deal_results",
                      "_results", "s", "streams", "m", "_cc", "_obs_scratch", "step_out", "_step_options"))


class VecEnv:
    """Base class of the batched engines: ``num_envs`` games of one kind stepped in lockstep.

    Subclasses set ``Game`` (the reference rules class, whose ``Config`` and layouts they share) and
    implement ``_first_deals`` (or the whole ``_reset_all``), ``_apply`` (one action per row), ``_encode``
    (acting seats' observations and masks), ``_state_into`` (``state``), ``_observe_seat`` (``observation_of``),
    ``_view`` over ``CARD_VIEWS`` (the card-state views), and the finished episodes' records (``_alloc_records``
    and ``RECORD``, or their own ``_clear_records``, ``_info_arrays`` and ``final_info``).
    """

    Game: type[TrickGame]
    # the game's own default EnvConfig.reward_scale, as its AEC env's (None: EnvConfig's default)
    default_reward_scale: float | None = None
    # whether get_state()/set_state() capture the engine's whole state (what a trainer's checkpoint
    # snapshots for an exact --resume); an engine holding other objects overrides the two methods
    checkpointable: bool = True
    # whether ``_encode`` writes ``obs_format="sparse"`` itself (into ``self._sp_*``); if not, the dense
    # rows it writes are converted after it (``sparse.from_dense``: the loop engine)
    writes_sparse: bool = False

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 observe: bool = True, obs_format: str = "dense", **options: Any):
        # ValueError for every bad num_envs, as make_config's for a bad option (bools are not counts)
        if (isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer))
                or num_envs < 1):
            raise ValueError(f"num_envs must be a positive integer (the number of games, e.g. 1024); got "
                             f"{num_envs!r} ({type(num_envs).__name__})")
        if not isinstance(observe, (bool, np.bool_)):
            raise TypeError(f"observe must be True or False (False: masks only, obs is an empty [B, 0] array); "
                            f"got {observe!r}")
        if not isinstance(obs_format, str) or obs_format not in OBS_FORMATS:
            raise ValueError(f"obs_format must be one of {list(OBS_FORMATS)} (dense: float32[B, OBS]; sparse: each "
                             f"row's nonzero features, a SparseObs); got {obs_format!r}")
        if obs_format == "sparse" and not observe:
            raise ValueError("obs_format='sparse' needs observe=True (with observe=False no observation is built "
                             "at all); pass one or the other")
        self.config, self.env_config = game_and_env_configs(self.Game.Config, options, self.default_reward_scale)
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
        self.observe = bool(observe)
        self.seed = seed
        self.row_seeds = row_seeds(seed, B)
        self._ar = np.arange(B, dtype=np.int64)
        self._seat = np.zeros(B, dtype=np.int64)
        self.obs_format = obs_format
        self.sparse = obs_format == "sparse"
        self._obs = self._dense_buffer()
        self.sparse_width = self.Game.sparse_width(self.config) if self.sparse else 0
        sp = sparse_buffers(B if self.sparse else 0, self.sparse_width, self.obs_size)
        self._sp_cols, self._sp_vals, self._sp_counts = sp.cols, sp.vals, sp.counts
        self._no_obs = np.zeros((B, 0), dtype=np.float32)  # what observe=False returns
        self._mask = np.zeros((B, self.num_actions), dtype=bool)
        # the rewards collected since each seat's last decision, this step's, and the output's
        self._cum, self._step_rew, self._out_rew = (np.zeros((B, self.num_players)) for _ in range(3))
        self._cum_flat = self._cum.reshape(-1)  # a view: 1-D indexing is numpy's fast scatter path
        self._done = np.zeros(B, dtype=bool)
        self._dirty = False  # _step_rew / _done hold something from the last step
        self._ready = False
        # hands finished in the last step, as (row, result) with ``result`` the rules module's own
        # history entry (scores, declarations, piles ...), for per-deal statistics; filled by engines that
        # keep rules objects (Ottocento), empty for the others. Not part of the checkpointed state.
        self.deal_results: list[tuple[int, dict]] = []

    # --- public API ---------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> VecStep:
        """Start every row afresh (row i from ``row_seeds[i]``; a new ``seed`` replaces the seeds)."""
        seed = check_seed(seed)  # a bool, a negative number or a float is refused, naming the seed
        if seed is not None:
            self.seed = seed
            self.row_seeds = row_seeds(seed, self.num_envs)
        self._reset_all()
        self._dirty = False
        return self._new_episodes()

    def step(self, actions, validate: bool = True) -> VecStep:
        """Apply one action per row (``actions``: ints of shape ``[B]``) for the seat to act.

        With ``validate`` (default) every action is checked against the row's mask first; if any is
        illegal a ``ValueError`` names the rows, the actions and the legal ones, and nothing changes.
        Actions of the wrong shape or of non-integer values raise ``ValueError``, bools and other
        non-numeric types ``TypeError`` (integer-valued floats such as ``2.0`` are taken as integers).
        ``validate=False`` skips the check (for drivers that sample from the mask).
        """
        if not self._ready:
            raise ValueError("step() called before reset(): call reset() first")
        if validate and isinstance(actions, (list, tuple)) and any(isinstance(x, (bool, np.bool_)) for x in actions):
            raise TypeError("actions must be integer action ids, not bools (True is not action 1); got "
                            f"{actions!r}")
        a = np.asarray(actions)
        if validate:
            a = self._check(a)
        elif a.dtype != np.int64:
            a = a.astype(np.int64)
        self._cum_flat[self._ar * self.num_players + self._seat] = 0.0  # the acting seat collects from now on
        if self.deal_results:
            self.deal_results = []
        if self._dirty:  # the last step paid rewards or ended episodes: clear them
            self._step_rew[:] = 0.0
            self._done[:] = False
            self._dirty = False
        self._apply(a)  # an engine that writes _step_rew or _done sets _dirty
        if self._dirty:
            self._cum += self._step_rew
        self._out_rew[:] = self._cum
        if self._dirty and self._done.any():
            self._cum[self._done] = 0.0  # the next episode starts with nothing collected
        self._encode()
        return self._result()

    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        """float32[B, STATE]: ``Game.state_vector()`` of every row (centralised critics only), written by the
        game's ``_state_into``; ``out`` (a C-contiguous float32[B, STATE]) is filled instead of a new array."""
        shape = (self.num_envs, self.state_size)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"state(out=...) needs a C-contiguous float32 array of shape {shape}; got "
                             f"{out.dtype} {out.shape}")
        self._state_into(out)
        return out

    def _state_into(self, out: np.ndarray) -> None:
        raise NotImplementedError

    # --- read-back views, for tests and tools ----------------------------------------------------------
    CARD_VIEWS: ClassVar[tuple[str, ...]] = ()  # the card-state views __getattr__ serves (``_view``)

    def _view(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def __getattr__(self, name: str):
        """The card-state views (``CARD_VIEWS``: ``hands``, ``won``, …) as fresh ``[B, ...]`` arrays, for tests."""
        if name in type(self).CARD_VIEWS and "s" in self.__dict__:
            return self._view(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def observation_of(self, seat: int) -> np.ndarray:
        """float32[B, OBS]: every row's observation of absolute seat ``seat`` (for tests and critics)."""
        if not 0 <= int(seat) < self.num_players:
            raise ValueError(f"seat must be in 0..{self.num_players - 1}, got {seat!r}")
        out = np.zeros((self.num_envs, self.obs_size), dtype=np.float32)
        self._observe_seat(np.full(self.num_envs, int(seat), dtype=np.int64), out)
        return out

    def _observe_seat(self, seats: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError

    @property
    def m(self) -> SimpleNamespace:
        """Every seat's observation, ``m.obs`` (float32[B, players, OBS]: ``observation_of`` of each seat, a fresh
        array), for tests and tools."""
        return SimpleNamespace(obs=np.stack([self.observation_of(s) for s in range(self.num_players)], axis=1))

    def action_name(self, action: int) -> str:
        return self.Game.action_name(int(action))

    # --- starting rows from rules objects (agents/players/pimc.py: rollouts from sampled worlds) --------------
    def load_games(self, games, rows=None, *, check: bool = True) -> VecStep:
        """Set row ``rows[i]`` (default: every row) to the whole state of rules object ``games[i]``, so that
        the row then plays exactly as that object would; the loaded rows start a new episode, and the
        current outputs are returned, as by ``reset``. Rows not named keep their state (an engine never
        reset must load every row). ``ValueError``, and nothing changes, for an object of another game or
        options, a finished game, a state the rules cannot reach (``TrickGame.check_state``; ``check=False``
        skips it, ~0.1 ms an object, for the sampler's worlds) or bad ``rows``: docs/batched.md, "Rows from
        rules objects"."""
        games = list(games)
        rows = self._rows_to_load(games, rows)
        self._check_games(games, check)
        if len(rows):
            # one group of rows per distinct object (a search loads each sampled world into one row per
            # action it tries): each object is read once and written to all its rows at once
            groups: dict[int, tuple[list[int], Any]] = {}
            for r, g in zip(rows.tolist(), games):
                groups.setdefault(id(g), ([], g))[0].append(r)
            self._load_rows([(np.array(r, dtype=np.int64), g) for r, g in groups.values()])
        return self._new_episodes(rows)

    def _rows_to_load(self, games: list, rows) -> np.ndarray:
        """:meth:`load_games`' ``rows`` as int64 row indices, checked against ``games`` and this engine."""
        if rows is None:
            if len(games) != self.num_envs:
                raise ValueError(f"load_games: {len(games)} games for {self.num_envs} rows; pass one rules "
                                 f"object per row, or rows=[...] naming the rows to load")
            rows = np.arange(self.num_envs, dtype=np.int64)
        else:
            if isinstance(rows, (bool, np.bool_)) or np.asarray(rows).dtype.kind not in "iu":
                raise ValueError(f"load_games: rows must be integer row indices; got {rows!r}")
            rows = np.asarray(rows, dtype=np.int64).reshape(-1)
            if len(rows) != len(games):
                raise ValueError(f"load_games: {len(games)} games for {len(rows)} rows")
            if len(rows) and (rows.min() < 0 or rows.max() >= self.num_envs):
                raise ValueError(f"load_games: rows must be in 0..{self.num_envs - 1}; got {rows.tolist()}")
            if len(np.unique(rows)) != len(rows):
                raise ValueError(f"load_games: a row is named twice in {rows.tolist()}")
        if not self._ready and len(np.unique(rows)) != self.num_envs:
            raise ValueError("load_games: this engine was never reset, so every row must be loaded (or call "
                             "reset() first)")
        return rows

    def _check_games(self, games: list, check: bool) -> None:
        """:meth:`load_games`' objects: this engine's game and options, in play, and (``check``) a state the
        rules can reach."""
        for i, g in enumerate(games):
            if type(g) is not self.Game:
                raise ValueError(f"load_games: games[{i}] is a {type(g).__name__}, not a {self.Game.__name__} "
                                 f"({self.Game.name})")
            if g.config != self.config:
                diff = {k: (v, getattr(self.config, k)) for k, v in g.config.to_dict().items()
                        if v != getattr(self.config, k)}
                raise ValueError(f"load_games: games[{i}] has other {self.Game.name} options than this engine "
                                 f"(option: (game's, engine's)): {diff}")
            if g.game_over:
                raise ValueError(f"load_games: games[{i}] is over (no seat to act); a row always has a "
                                 f"decision to make: load a game still in play")
        if check:
            for i, g in {id(g): (i, g) for i, g in enumerate(games)}.values():
                problems = g.state_problems()
                if problems:
                    raise ValueError(f"load_games: games[{i}] is not a state the rules can reach: "
                                     + "; ".join(problems[:5]))

    def load_rows(self, rows, index) -> VecStep:
        """Set row ``i`` of this engine to row ``index[i]`` of ``rows``, a state of this game's declared
        rows (``PartitaRows`` …: what ``tarot_env.sampler.Determinizer.sample_rows`` writes worlds into), all
        at once; each row starts a new episode from there, as with :meth:`load_games`. The state is not
        checked (for rows consistent by construction: sampled worlds). ``ValueError`` for a state of
        another kind or an ``index`` of the wrong length or range; nothing changes then."""
        if not isinstance(self, type(rows)):
            raise ValueError(f"load_rows: {type(self).__name__} cannot take a {type(rows).__name__} (its rows are "
                             f"not a state of this engine's game)")
        index = np.asarray(index)
        n = len(next(iter(rows.arrays().values())))
        if index.shape != (self.num_envs,) or index.dtype.kind not in "iu" or (
                len(index) and (index.min() < 0 or index.max() >= n)):
            raise ValueError(f"load_rows: index must be {self.num_envs} row numbers in 0..{n - 1}; got "
                             f"{index.dtype} {index.shape}")
        self._copy_rows(rows, index)
        return self._new_episodes()

    def _new_episodes(self, rows=slice(None)) -> VecStep:
        """Rows ``rows`` (default all) start new episodes (nothing collected, not done); the outputs now."""
        for a in (self._cum, self._step_rew, self._out_rew, self._done):
            a[rows] = 0
        self._ready = True
        self._encode()
        return self._result()

    def _copy_rows(self, rows, index: np.ndarray, to=slice(None)) -> None:
        """Rows ``to`` become rows ``index`` of ``rows`` (their arrays, their streams): a new episode, whose
        records are cleared (``_clear_records``)."""
        if not isinstance(self, Rows):
            raise NotImplementedError(f"{type(self).__name__} has no declared rows to load")
        for k, v in rows.arrays().items():
            getattr(self, k)[to] = v[index]
        self._clear_records(to)

    def _load_rows(self, groups: list[tuple[np.ndarray, TrickGame]]) -> None:
        """For each ``(rows, game)`` of ``groups``: ``game``'s row (its arrays, its stream) copied into each of
        ``rows`` (an int64 array; validated already, every row named once)."""
        for r, g in groups:
            self._copy_rows(g.row, np.zeros(len(r), dtype=np.int64), r)

    # --- checkpoints (agents.training.rollout.VecCollector.state_dict) ---------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The engine's whole mutable state, by attribute name, for an exact checkpoint: the live attributes
        (``vars(self)``, not copies: encode them before the next step) less ``_UNSAVED``. A trainer encodes the
        arrays, generators, scalars, strings, ``None`` and containers of those (and objects of
        ``tarot_env.vector``, walked the same way) for ``torch.load(weights_only=True)`` and leaves the rest
        (the configs) to the constructor."""
        return {k: v for k, v in vars(self).items() if k not in _UNSAVED}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`get_state` gave (decoded, on an engine built with the same arguments). A state
        of another batch size, or whose rows' arrays (``Rows.ARRAYS``) are missing or of another shape or dtype
        (saved by another version of the engine), is refused by name before anything changes. A decoder writes
        arrays into the current ones in place where shape and dtype agree (views into them stay valid) and
        passes those same objects back; the rest is set as attributes, and the kernels' views rebuilt."""
        if isinstance(self, Rows):
            name, held = self.Game.name.capitalize(), {len(state[k]) for k in self.ARRAYS if np.ndim(state.get(k))}
            if held - {self.num_envs}:
                raise ValueError(f"the state holds {max(held)} {name} games, this engine has num_envs={self.num_envs}")
            bad = [k for k, v in self.arrays().items() if k not in state or np.shape(state[k])[1:] != v.shape[1:]
                   or np.asarray(state[k]).dtype != v.dtype]
            if bad:
                raise ValueError(f"this {name} state's rows do not match this engine's arrays ({', '.join(bad)}: "
                                 "missing, or of another shape or dtype): a state saved by another version of the "
                                 "engine")
        for k, v in state.items():
            if getattr(self, k, None) is not v:
                setattr(self, k, v)
        if self._obs.shape != (b := self._dense_buffer()).shape:  # a state saved in the other obs_format
            self._obs = b
        if isinstance(self, Rows):
            self._bind()

    # --- each row's last finished episode (Partita's and Millone's; Ottocento and the loop engine their own) -----
    # ``final`` (``scores``, ``winner``: the team, -1 a draw, ``NOT_OVER`` an ``episode="deal"`` episode that ended
    # with the game going on), ``final_last`` (its last record: arrays given to ``_alloc_records``), ``_finished``
    RECORD: ClassVar[Any]  # (final_last, row) -> the record dict, as the one-row game's history entry

    def _alloc_records(self, final_last: dict[str, np.ndarray]) -> None:
        B = self.num_envs
        self.final = {k: np.zeros((B,) + s, dtype=np.int64) for k, s in (("scores", (2,)), ("winner", ()))}
        self.final_last = final_last
        self._finished = np.zeros(B, dtype=bool)  # the row has finished an episode since reset()

    def _record_ends(self, done: np.ndarray, over: np.ndarray, winner: np.ndarray, record: dict) -> None:
        """Rows ``done`` ended their episode (done), the game over where ``over`` (won by ``winner``), with
        ``record`` (the last record's arrays, one row each)."""
        self.final["scores"][done] = self.scores[done]
        self.final["winner"][done] = np.where(over, winner, NOT_OVER)
        for k, v in record.items():
            self.final_last[k][done] = v
        self._done[done] = self._finished[done] = True

    def _clear_records(self, rows) -> None:
        """The records of ``rows`` (an index) cleared: a new episode, none finished."""
        for v in (*self.final.values(), *self.final_last.values()):
            v[rows] = 0
        self._finished[rows] = False

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"final_scores": self.final["scores"], "final_winner": self.final["winner"]}

    def final_info(self, row: int) -> dict[str, Any]:
        """The AEC env's final ``infos[agent]`` of row ``row``'s last finished episode, with the full
        ``last_result`` record (``RECORD``): :func:`tarot_env.rewards.final_info`, as the AEC env builds it."""
        if not self._finished[row]:
            raise ValueError(f"row {row} has not finished an episode yet")
        w = int(self.final["winner"][row])
        return final_info(self.final["scores"][row], None if w == NOT_OVER else w, self.RECORD(self.final_last, row))

    # --- helpers ------------------------------------------------------------------------------------
    def _dense_buffer(self) -> np.ndarray:
        """The dense observation rows (none where a kernel writes the sparse form itself)."""
        return np.zeros((0 if self.sparse and self.writes_sparse else self.num_envs, self.obs_size), np.float32)

    def _check(self, a: np.ndarray) -> np.ndarray:
        B, A = self.num_envs, self.num_actions
        if a.shape != (B,):
            raise ValueError(f"actions must have shape ({B},), one integer action id per game; got shape "
                             f"{a.shape}")
        if a.dtype.kind == "b":
            raise TypeError(f"actions must be integer action ids 0..{A - 1}, not bools (True is not action "
                            f"1); got dtype {a.dtype}")
        if a.dtype.kind == "f":
            whole = np.isfinite(a) & (a == np.round(a))
            if not whole.all():
                row = int(np.flatnonzero(~whole)[0])
                raise ValueError(f"actions must be integer action ids 0..{A - 1}; got dtype {a.dtype} with "
                                 f"non-integer values (row {row}: {float(a[row])!r})")
            a = a.astype(np.int64)  # integer-valued floats (2.0) are taken as their integers
        elif a.dtype.kind not in "iu":
            raise TypeError(f"actions must be integer action ids 0..{A - 1}; got dtype {a.dtype}")
        a = a.astype(np.int64, copy=False)
        inr = (a >= 0) & (a < A)
        ok = inr & self._mask[self._ar, np.clip(a, 0, A - 1)]
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
        obs = self._obs if self.observe else self._no_obs
        if self.sparse:
            if not self.writes_sparse:
                from_dense(self._obs, self._sp_cols, self._sp_vals, self._sp_counts)
            obs = SparseObs(self._sp_cols, self._sp_vals, self._sp_counts, self.obs_size)
            check_counts(obs, self.Game.name)
        return VecStep(seat=c(self._seat), obs=c(obs), mask=c(self._mask), rewards=c(self._out_rew),
                       step_rewards=c(self._step_rew), done=c(self._done),
                       info={k: c(v) for k, v in self._info_arrays().items()})

    def _reset_all(self) -> None:
        """Every row's first game, as the reference ``Game(config, seed=row_seeds[i])``: a numpy Generator
        ``default_rng(seed)`` draws the first dealer (``integers(players)`` unless ``first_dealer`` is set) and
        its state goes on as the row's stream; scores and records cleared; then the game's
        ``_first_deals(dealers)``."""
        rngs = [np.random.default_rng(s) for s in self.row_seeds]
        fd, players = self.config.first_dealer, self.num_players
        dealers = np.array([int(g.integers(players)) if fd < 0 else fd for g in rngs], dtype=np.int64)
        self.streams.load(range(self.num_envs), rngs)
        self.scores[:] = 0
        self._clear_records(slice(None))
        self._first_deals(dealers)

    def _game_result_rewards(self, rows: np.ndarray, winner: np.ndarray) -> None:
        """``reward="game"``: pay ``rows`` their game result (:func:`tarot_env.rewards.game_rewards`:
        +1 to the winning team's seats, −1 to the others, 0 for a draw, ``winner == -1``)."""
        self._step_rew[rows] = game_rewards(winner, self.Game.team_of)

