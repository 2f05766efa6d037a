"""Ottocento, batched: ``num_envs`` games of RULES.md Part C stepped together.

The game is written once, in :mod:`tarot_env.rules.ottocento` (``OttocentoRows``: the state and its kernels); this
engine runs it on ``num_envs`` rows and adds what a batch of episodes needs, through :class:`VecEnv`. Row ``i``
plays exactly ``OttocentoGame(config, seed=row_seeds[i])`` and, after each finished game, its ``next_game()``
(OTT-1.3); with ``episode="deal"`` an episode ends after each hand and the game goes on.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..rewards import deal_rewards, game_rewards
from ..rewards import final_info as _final_info
from ..rules.ottocento import (
    _R_SCORES,
    _RECORD_LEN,
    FIELDS,
    NEXT_GAME,
    TEAM_OF,
    OttocentoGame,
    OttocentoRows,
    _record,
    _result,
)
from .base import NOT_OVER, VecEnv
from .combo_cache import ComboCache


class _DealResults:
    """``deal_results`` of the last step: ``(row, result)`` pairs whose ``result`` dicts are built from
    the records only when read (a trainer's per-hand statistics); its length costs nothing."""

    def __init__(self, pairs: list):
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self):
        return ((b, _result(rec)) for b, rec in self.pairs)

    def __getitem__(self, i):
        return list(self)[i]


class OttocentoVec(VecEnv, OttocentoRows):
    """``num_envs`` Ottocento games in lockstep (see the module docstring and :class:`VecEnv`); the state's
    arrays (:class:`OttocentoRows`) are its attributes."""

    Game = OttocentoGame
    default_reward_scale = 200.0  # as tarot_env.envs.ottocento.raw_env
    checkpointable = True  # every attribute is an array or plain data
    CARD_VIEWS = FIELDS  # hands, won, … (``OttocentoRows.field``)
    _view = OttocentoRows.field
    _state_into = OttocentoRows.state_into  # VecEnv.state: OttocentoGame.state_vector of every row

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 **options: Any):
        VecEnv.__init__(self, num_envs, seed, copy_outputs=copy_outputs, **options)
        B = self.num_envs
        self._alloc(B)
        self._history: list[list[list[int]]] = [[] for _ in range(B)]  # each row's hands' records
        self._truncated = np.zeros(B, dtype=bool)
        self._final_scores = np.zeros((B, 2), dtype=np.int64)
        self._final_hand = np.zeros((B, 2), dtype=np.int64)
        self._final_winner = np.full(B, NOT_OVER, dtype=np.int64)
        self._final: list[list | None] = [None] * B  # the last episode's [scores, winner, record]
        # v2 pile_combos / combo_gain: each team's won pile valued, pile k = team k; a cache that checks
        # its keys (not part of get_state, kept across set_state)
        self._cc = ComboCache.empty(B, 2)

    # --- VecEnv hooks -------------------------------------------------------------------------------
    def _first_deals(self, dealers: np.ndarray) -> None:
        """``VecEnv._reset_all``: every row's first hand (OTT-1.2: ``Game(config, seed)``'s first dealer)."""
        self.hands_played[:] = 0
        self.next_hands(self._ar, dealers)

    def _apply(self, a: np.ndarray) -> None:
        """Every row's action and the next legal masks (``OttocentoRows.act``, one compiled call); then the rows
        whose hand ended (:meth:`_hands_ended`)."""
        self._truncated[:] = False  # valid where done, as the loop engine's
        n = self.act(np.ascontiguousarray(a, dtype=np.int64), NEXT_GAME, self._mask)
        self._masks_written = True  # the step wrote the next masks: _encode leaves them
        if n:
            self._hands_ended(n)

    def _hands_ended(self, n: int) -> None:
        """The ``n`` hands that ended in this step (``step_out[:n]``; their rows hold the next hand, or game): the
        records kept (``_history``: lists of ints, made dicts by ``_result`` when read), the rewards
        (``tarot_env.rewards``), the ends of episodes (:meth:`_episodes_ended`)."""
        self._dirty = True
        out = self.step_out
        r, rec = out.rows[:n], out.rec[:n]
        hist, results = self._history, self._results
        rows = r.tolist()
        for b, x in zip(rows, rec.tolist()):
            x = x[:_RECORD_LEN[x[0]]]
            hist[b].append(x)
            results.append((b, x))
        winner, trunc = out.winner[:n], out.trunc[:n]
        over = (winner >= 0) | trunc
        any_over = bool(over.any())
        if self.env_config.reward == "deal":
            self._step_rew[r] += deal_rewards(rec[:, _R_SCORES:_R_SCORES + 2], TEAM_OF,
                                              float(self.env_config.reward_scale))
        elif any_over:
            self._step_rew[r[over]] = game_rewards(winner[over], TEAM_OF)
        if self.env_config.episode == "deal":
            self._episodes_ended(np.arange(n), over)
        elif any_over:
            self._episodes_ended(np.flatnonzero(over), over)
        if any_over:  # next_game(): its records start afresh
            for b in r[over].tolist():
                hist[b] = []

    def _episodes_ended(self, ends: np.ndarray, over: np.ndarray) -> None:
        """The episodes of the hands ``ends`` (indices into ``step_out[:n]``) ended: done, with their final info
        (``over``: the hands whose game is over)."""
        out = self.step_out
        re, total = out.rows[ends], out.totals[ends]
        self._done[re] = True
        self._truncated[re] = out.trunc[ends]
        self._final_scores[re] = total
        self._final_hand[re] = out.rec[ends, _R_SCORES:_R_SCORES + 2]
        w = np.where(over[ends], out.winner[ends], NOT_OVER)
        self._final_winner[re] = w
        hist = self._history
        for b, s, wb in zip(re.tolist(), total.tolist(), w.tolist()):
            self._final[b] = [s, None if wb == NOT_OVER else wb, hist[b][-1]]

    # --- encoders ------------------------------------------------------------------------------------
    writes_sparse = True  # obs_format="sparse": OttocentoRows.encode

    def _encode(self) -> None:
        """The acting seats' observations (dense, or in sparse form) and masks (``OttocentoRows.encode``); after
        a step, whose kernel wrote the masks (:meth:`_apply`), the observations only, and with ``observe=False``
        nothing more."""
        np.copyto(self._seat, self.current)
        masks = not self.__dict__.pop("_masks_written", False)
        if self.observe or masks:
            sparse = (self._sp_cols, self._sp_vals, self._sp_counts) if self.sparse else None
            self.encode(self.current, self._obs, self.observe, self._mask, masks, self._cc, sparse)

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"truncated": self._truncated, "final_scores": self._final_scores,
                "final_hand_scores": self._final_hand, "final_winner": self._final_winner}

    @property
    def deal_results(self) -> _DealResults:
        """The hands finished in the last step, as ``(row, result)`` with ``result`` the rules module's
        own history entry (built when read)."""
        return _DealResults(self._results)

    @deal_results.setter
    def deal_results(self, value) -> None:  # VecEnv clears it at each step
        self._results = list(value)

    # --- public extras --------------------------------------------------------------------------------
    @property
    def games(self) -> list[OttocentoGame]:
        """Every row's game as an ``OttocentoGame`` (copies of the rows, for tests and debugging:
        changing them changes nothing here)."""
        return [self._game_of(b) for b in range(self.num_envs)]

    def _game_of(self, b: int) -> OttocentoGame:
        return OttocentoGame.of_row(self, b, [_result(rec) for rec in self._history[b]])

    def _clear_records(self, to) -> None:
        """Rows ``to`` start a new episode: no finished hand's record (rows carry no history), no final info."""
        for b in np.arange(self.num_envs)[to].tolist():
            self._history[b] = []
            self._final[b] = None
        self._truncated[to] = False
        self._final_scores[to] = self._final_hand[to] = 0
        self._final_winner[to] = NOT_OVER

    def _load_rows(self, groups: list[tuple[np.ndarray, OttocentoGame]]) -> None:
        """``VecEnv.load_games``: each game's row (its arrays, its stream) copied into its rows, and the
        records of its finished hands."""
        records = [[_record(x) for x in g.history] for _, g in groups]  # (raises before anything changes)
        for (r, g), rec in zip(groups, records):
            self._copy_rows(g.row, np.zeros(len(r), dtype=np.int64), r)
            for b in r.tolist():
                self._history[b] = list(rec)  # (each row appends its own hands)

    def final_info(self, row: int) -> dict[str, Any]:
        if not 0 <= int(row) < self.num_envs:
            raise ValueError(f"row must be in 0..{self.num_envs - 1}, got {row!r}")
        if self._final[row] is None:
            raise ValueError(f"row {row} has not finished an episode yet")
        scores, winner, rec = self._final[row]
        return _final_info(scores, winner, _result(rec))  # the AEC env's builder (tarot_env.rewards)

    def _observe_seat(self, seats: np.ndarray, out: np.ndarray) -> None:
        self.encode(seats, out, True, self._mask, False, self._cc)
