"""The batched Ottocento engine: one rules object per row, driven directly (no AEC env per row).

Row ``i`` is ``OttocentoGame(config, seed=row_seeds[i])`` and, after each finished game,
``next_game()`` (with ``episode="deal"`` an episode ends after each hand and the game goes on), exactly
as the registered AEC environment plays it: same observations, masks, rewards, ends (terminated or
truncated at ``max_hands``) and final infos, checked step by step by ``tests/test_vector_ottocento.py``.

Design (pragmatic hybrid). Every state change -- a monte, discard, declarations (``declarable_cards``,
``combo_points``), card play and trick resolution, the end-of-hand scoring (Matto payment, discards,
combos, C.9), the next hand and the next game -- is the rules module's own code
(``OttocentoGame.apply_unchecked``, ``next_game``), one rules object per row, so there is one rules
implementation of the transitions. What is batched across rows:

* the per-card state: every row's state block lives in one ``bool[B, BLOCK]`` matrix; each game's
  ``block`` and its named views are re-bound (``TrickGame.bind_block``) to its row whenever the rules
  object starts a new hand, so the rules code writes straight into the batch matrix;
* the acting seats' observations: the card sections are one gather per seat through the reference's
  ``_OBS_GATHER`` table, the scalar features array arithmetic (``OttocentoGame.observation`` for all
  rows at once);
* the PLAY-phase masks (the bulk of the decisions): follow / trump / anything with the Matto always
  legal (B.4), the signals under ``ott_signal_players`` (OTT-8.3) and ``ott_signal_timing``
  (OTT-8.4, incl. the restricted card choice after a signal) as boolean algebra over the block; the
  rare phases' masks are the rules' ``legal_mask``;
* rewards from the new ``history`` entries, and final results as arrays (``info``: ``truncated``,
  ``final_scores``, ``final_hand_scores``, ``final_winner`` with -2 for an ``episode="deal"``
  episode whose game goes on); ``final_info(row)`` is the AEC env's dict.

The transitions are still per row in Python (about two thirds of the time, see the README figures): a
fully vectorised PLAY step like ``vector/millone.py``'s is the next step for more speed.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..cards import BOLOGNESE, TRUMP
from ..engine import NUM_SIGNALS
from ..rules.ottocento import (_OBS_GATHER, DECLARED_SCALE, HAND_SIZE, MATTO, MAX_HELD, OBS, PLAYERS,
                                TEAM_OF, TOP_CARD, N, OttocentoGame, Phase)
from .base import VecEnv

_GATHER = np.stack([np.asarray(g, dtype=np.int64) for g in _OBS_GATHER])  # [seat, card sections]
_G = _GATHER.shape[1]
_REL = (np.arange(PLAYERS)[:, None] + np.arange(PLAYERS)[None, :]) % PLAYERS  # [seat, i] -> seat + i
_IX = OttocentoGame.block_index()
_SUIT = np.asarray(BOLOGNESE.suit)  # 0..3, TRUMP, EXCUSE (the Matto)
_IN_SUIT = np.stack([_SUIT == s for s in range(5)] + [np.ones(N, dtype=bool)])  # [led suit or 5=none: all, N]
_TRUMPS = _SUIT == TRUMP
_NONE = 5  # "no led suit yet" (empty trick, or only the Matto)

NOT_OVER = -2  # final_winner of an episode="deal" episode that ended with the game going on
_TEAM = np.array(TEAM_OF, dtype=np.int64)


class OttocentoVec(VecEnv):
    """``num_envs`` Ottocento games behind the batched API (see the module docstring)."""

    checkpointable = False  # one rules object per row: not captured by an array snapshot

    Game = OttocentoGame
    default_reward_scale = 200.0  # as tarot_env.envs.ottocento.raw_env

    def __init__(self, num_envs: int, seed: int | None = None, *, copy_outputs: bool = False,
                 **options: Any):
        super().__init__(num_envs, seed, copy_outputs=copy_outputs, **options)
        B = self.num_envs
        self.games: list[OttocentoGame] = []
        self._seen = np.zeros(B, dtype=np.int64)  # len(history) at the episode's last step
        self._truncated = np.zeros(B, dtype=bool)
        self._final_scores = np.zeros((B, 2), dtype=np.int64)
        self._final_hand = np.zeros((B, 2), dtype=np.int64)
        self._final_winner = np.full(B, NOT_OVER, dtype=np.int64)
        self._final: list[dict | None] = [None] * B
        self._deal_reward = self.env_config.reward == "deal"
        self._episode_deal = self.env_config.episode == "deal"
        self._scale = float(self.env_config.reward_scale)
        # every row's state block lives in one matrix: each game's block (and its named views) is
        # re-bound to its row whenever the rules object starts a new hand (a new block), so the
        # observations' card sections are one batched gather
        self._blocks = np.zeros((B, OttocentoGame.block_size()), dtype=bool)
        self._rows = list(self._blocks)  # the row views, bound into the games

    def _adopt(self, b: int) -> None:
        """Move game ``b``'s state block into row ``b`` of the batch matrix (values unchanged)."""
        g, row = self.games[b], self._rows[b]
        row[:] = g.block
        g.block = row
        OttocentoGame.bind_block(g, row)

    # --- VecEnv hooks -------------------------------------------------------------------------------
    def _reset_all(self) -> None:
        cfg = self.config
        self.games = [OttocentoGame(cfg, s) for s in self.row_seeds]
        for b in range(self.num_envs):
            self._adopt(b)
        self._seen[:] = [len(g.history) for g in self.games]
        self._truncated[:] = False
        self._final_scores[:] = 0
        self._final_hand[:] = 0
        self._final_winner[:] = NOT_OVER
        self._final = [None] * self.num_envs

    def _apply(self, a: np.ndarray) -> None:
        games, seen = self.games, self._seen
        self._truncated[:] = False  # valid where done, as the loop engine's
        acts = a.tolist()
        ended = []
        rows = self._rows
        for b, g in enumerate(games):
            g.apply_unchecked(acts[b])
            if g.block is not rows[b]:  # a new hand (or a thrown-in one): a new block
                self._adopt(b)
            n = len(g.history)
            if n != seen[b] or g.game_over:
                ended.append(b)
        if not ended:
            return
        self._dirty = True
        rew, scale = self._step_rew, self._scale
        for b in ended:
            g = games[b]
            new = g.history[int(seen[b]):]
            seen[b] = len(g.history)
            if self._deal_reward:
                for result in new:
                    s = result["scores"]
                    diff = float(s[0] - s[1])  # team 0's score minus team 1's
                    for p in range(4):
                        rew[b, p] += (diff if TEAM_OF[p] == 0 else -diff) / scale
            elif g.game_over:
                w = g.winner
                for p in range(4):
                    rew[b, p] = 0.0 if w == -1 else (1.0 if w == TEAM_OF[p] else -1.0)
            if g.game_over or (self._episode_deal and new):
                self._done[b] = True
                trunc = bool(getattr(g, "truncated", False))
                self._truncated[b] = trunc
                info = {"scores": g.scores.tolist(), "winner": g.winner,
                        "last_result": g.history[-1] if g.history else None}
                self._final[b] = info
                self._final_scores[b] = info["scores"]
                self._final_hand[b] = info["last_result"]["scores"] if info["last_result"] else (0, 0)
                self._final_winner[b] = NOT_OVER if g.winner is None else g.winner
                if g.game_over:  # the AEC env's reset(): the next game, or the same game's next deal
                    games[b] = g = g.next_game()
                    self._adopt(b)
                seen[b] = len(g.history)

    def _encode(self) -> None:
        """The acting seats' observations (``OttocentoGame.observation`` for all rows at once: one
        gather of the card sections, the scalar features as array arithmetic) and masks (the rules')."""
        games, mask, o, ar = self.games, self._mask, self._obs, self._ar
        sc = np.array([(g.current, g.dealer, g.leader, g.pending_signal, int(g.phase), g.hands_played,
                        *g.hand_sizes, *g.declared_points) for g in games], dtype=np.int64)
        tw = np.stack([g.tricks_won for g in games])
        score = np.stack([g.scores for g in games])
        cur = sc[:, 0]
        self._seat[:] = cur
        for v in range(PLAYERS):  # one column gather per seat (the gather table is per seat)
            r = np.flatnonzero(cur == v)
            if len(r):
                o[r, :_G] = self._blocks[r][:, _GATHER[v]]
        o[:, _G:] = 0.0
        pend = sc[:, 3]
        sig = np.flatnonzero(pend >= 0)
        o[sig, OBS.pending_signal.start + pend[sig]] = 1.0
        o[ar, OBS.seat_from_dealer.start + (cur - sc[:, 1]) % PLAYERS] = 1.0
        o[ar, OBS.leader.start + (sc[:, 2] - cur) % PLAYERS] = 1.0
        rel = _REL[cur]
        o[:, OBS.hand_sizes] = sc[:, 6:10][ar[:, None], rel] / MAX_HELD
        o[:, OBS.declared_points] = sc[:, 10:14][ar[:, None], rel] / DECLARED_SCALE
        my = _TEAM[cur]
        t, s_ = OBS.tricks_won.start, OBS.scores.start
        o[:, t], o[:, t + 1] = tw[ar, my] / HAND_SIZE, tw[ar, 1 - my] / HAND_SIZE
        target, k, h = self.config.target_score, self.config.max_hands, OBS.hands_played.start
        o[:, s_], o[:, s_ + 1] = score[ar, my] / target, score[ar, 1 - my] / target
        hp = sc[:, 5]
        o[:, h], o[:, h + 1] = hp / k, (k - hp) / k
        o[ar, OBS.phase.start + sc[:, 4]] = 1.0
        play = sc[:, 4] == Phase.PLAY
        for b in np.flatnonzero(~play).tolist():  # the rare phases: the rules' own masks
            mask[b] = games[b].legal_mask()
        r = np.flatnonzero(play)
        if len(r):
            self._play_masks(r, sc[r, 0], sc[r, 1], sc[r, 2], sc[r, 3])

    def _play_masks(self, r, cur, dealer, leader, pend) -> None:
        """PLAY-phase masks of rows ``r`` (``OttocentoGame.play_mask`` as array algebra over the
        blocks): follow, else trump, else anything, the Matto always (B.4); the signals (OTT-8.3, 8.4)."""
        blk = self._blocks[r]
        n = len(r)
        nr = np.arange(n)
        hand = blk[nr[:, None], _IX.hands[cur]]  # [n, N]
        # the led suit: the first card of the trick (in order from the leader) that is not the Matto
        rel = (leader[:, None] + np.arange(PLAYERS)[None, :]) % PLAYERS
        tb = blk[:, _IX.trick_by.ravel()].reshape(n, PLAYERS, N)[nr[:, None], rel]  # [n, i, N]
        tb[:, :, MATTO] = False
        has = tb.any(2)
        first = has.argmax(1)
        card = tb[nr, first].argmax(1)
        led = np.where(has.any(1), _SUIT[card], _NONE)
        ok = hand & _IN_SUIT[led]
        no_follow = ~ok.any(1) & (led != _NONE)
        ok[no_follow] = hand[no_follow] & _TRUMPS
        no_trump = ~ok.any(1) & (led != _NONE)
        ok[no_trump] = hand[no_trump]
        ok[:, MATTO] = hand[:, MATTO]
        cfg = self.config
        after_top = cfg.ott_signal_timing == "after_top_card_played"
        if after_top:  # OTT-8.4: only cards of a suit whose top card was played earlier in the hand
            played = blk[:, _IX.played.ravel()].reshape(n, PLAYERS, N).any(1)
            top_out = played[:, TOP_CARD]  # [n, 5]
            sig_ok = ok & (top_out[:, :, None] & _IN_SUIT[None, :5]).any(1)
            sig_ok[:, MATTO] = False
        m = self._mask
        m[r] = False
        m[r, :N] = np.where((pend >= 0)[:, None], sig_ok, ok) if after_top else ok
        allowed = pend < 0
        if cfg.ott_signal_players == "eldest_only":  # OTT-8.3
            allowed &= cur == (dealer + 1) % PLAYERS
        if after_top:
            allowed &= sig_ok.any(1)
        m[r[allowed], N:N + NUM_SIGNALS] = True

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"truncated": self._truncated, "final_scores": self._final_scores,
                "final_hand_scores": self._final_hand, "final_winner": self._final_winner}

    # --- public extras --------------------------------------------------------------------------------
    def state(self, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty((self.num_envs, self.state_size), dtype=np.float32)
        for b, g in enumerate(self.games):
            g.state_vector(out=out[b])
        return out

    def final_info(self, row: int) -> dict[str, Any]:
        if not 0 <= int(row) < self.num_envs:
            raise ValueError(f"row must be in 0..{self.num_envs - 1}, got {row!r}")
        if self._final[row] is None:
            raise ValueError(f"row {row} has not finished an episode yet")
        return self._final[row]

    def observation_of(self, seat: int) -> np.ndarray:
        """float32[B, OBS]: every row's observation of absolute seat ``seat`` (for tests and critics)."""
        return np.stack([g.observation(seat) for g in self.games])

    @property
    def block(self) -> np.ndarray:
        """bool[B, BLOCK]: every row's per-card state block in the reference layout (a fresh copy)."""
        return np.stack([g.block for g in self.games])

    def __getattr__(self, name: str):
        """The reference's block fields (``hands``, ``won``, ...) as fresh ``[B, ...]`` copies."""
        games = self.__dict__.get("games")
        if games and name in {f for f, _ in OttocentoGame.block_fields()}:
            return np.stack([getattr(g, name).copy() for g in games])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
