"""Baseline players for the three games, behind the one ``Policy`` interface of ``agents/players/policy.py``.

* ``RandomPolicy`` (re-exported from ``agents.players.policy``): uniform among the legal actions.
* ``HeuristicPolicy(game)``: a rule-based club player. It reads **only the observation vector and the
  legal-action mask** — nothing from the rules object — decoding the observation through the game's
  ``OBS`` layout (``tarot_env.rules.<game>.OBS``) and the pack tables (suit, strength, equal group,
  counting value). So it sees exactly what a player at the table sees (RULES.md Part H) and can be
  used anywhere a policy is: in the AEC env, in the single-agent wrapper, in the arena, as a human's
  opponent. Its decisions are compiled (numba) kernels over the whole batch, in ``agents/players/heuristic.py``:
  ``act_batch`` is one call, at engine speed (docs/arena.md gives the figure).

What the heuristic does (standard tactics of RULES.md Parts C, D, E):

* **card play** — a *master* card is the highest card of its suit still unseen by me (played cards,
  my hand, my discards, announced discards and the won piles are known). Leading: answer the
  partner's signals first (``LEAD_TRUMPS`` → lead a trump; ``WIN_AND_RETURN`` → lead that suit back;
  ``VOID`` → lead that suit for the partner to trump); else cash a master with points while the
  opponents can still follow; else draw trumps with the master trump when I hold at least as many
  trumps as are still out; else lead low (a card without points) from my longest suit. Following:
  when the partner's card is safely winning, give it points ("smear": Kings, Queens, trump I …);
  when last to play, win with the winning card that carries the most points; otherwise win only
  with a card that cannot be beaten afterwards, else play low (no points, no trump if avoidable).
  The excuse (Fool / Matto) is played instead of a card that would give points away.
* **Partita** discard (PAR-4): the two lowest plain cards, from the shortest suits (voids let trumps
  win), never a counting card unless forced.
* **Ottocento**: *a monte* only with a worthless first packet (no trump, no court); discard (OTT-4) a
  court card without its King (it is banked in the team's pile) or a low card of a short suit;
  **declares** every card that can score (OTT-5: reveal ``M(hand)`` card by card, then done);
  the eldest signals (OTT-8) ``VOID`` when playing his last card of a suit while holding trumps and
  ``LEAD_TRUMPS`` once with a long, strong trump holding.
* **Millone** discards (MIL-2.4, 2.6): discards count for their owner, so it banks the court cards
  and aces (their points and combinations are safe in the pile) and empties short suits; it keeps
  the trumps that win tricks.
"""
from __future__ import annotations

import importlib

import numpy as np

from tarot_env.cards import BOLOGNESE, FRENCH54

from ..names import BASELINES
from . import heuristic as k
from .heuristic import decide_batch, game_tables
from .policy import Policy, RandomPolicy

__all__ = ["Policy", "RandomPolicy", "HeuristicPolicy", "BASELINES", "make_baseline"]


class _GameInfo:
    """What the heuristic knows of one game: its pack, seats, observation and action sizes, and the constant
    tables its compiled decision kernel reads (``agents.players.heuristic.game_tables``)."""

    def __init__(self, game: str):
        self.tables = game_tables(game)  # raises ValueError for a game without a heuristic
        g, cards, _ = self.tables
        self.game = game
        self.OBS = importlib.import_module(f"tarot_env.rules.{game}").OBS
        self.obs_size = int(self.OBS.size)
        self.num_actions = int(g[k.G_NUM_ACTIONS])
        self.pack = FRENCH54 if game == "partita" else BOLOGNESE
        self.players = int(g[k.G_PLAYERS])
        self.partner = 2 if self.players == 4 else None
        self.N = self.pack.size
        self.suit = cards[k.C_SUIT]
        self.strength = cards[k.C_STRENGTH]
        self.equal = cards[k.C_EQUAL].astype(bool)
        self.excuse = self.pack.excuse
        # points a card carries into a pile beyond a plain card (PAR-6.1; B.3.1 less the scartino's 1)
        self.pts = cards[k.C_PTS]


class HeuristicPolicy(Policy):
    """A rule-based player of ``game`` that decodes the observation (see the module docstring).

    Deterministic: the same observation and mask always give the same action. ``act_batch`` is one call
    of the compiled kernel ``agents.players.heuristic.decide_batch`` over the whole batch.
    """

    def __init__(self, game: str, seed: int | None = None):
        self.info = _GameInfo(game)
        self.game = game

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        mask = np.ascontiguousarray(mask, dtype=bool)
        if obs.ndim != 2 or mask.ndim != 2 or len(obs) != len(mask):
            raise ValueError(f"act_batch wants obs[n, {self.info.obs_size}] and mask[n, "
                             f"{self.info.num_actions}]; got {obs.shape} and {mask.shape}")
        if obs.shape[1] != self.info.obs_size or mask.shape[1] != self.info.num_actions:
            raise ValueError(f"{self.game} heuristic: obs must have {self.info.obs_size} columns and mask "
                             f"{self.info.num_actions}; got {obs.shape[1]} and {mask.shape[1]}")
        if not mask.any(axis=1).all():
            raise ValueError("a mask row has no legal action")
        return decide_batch(obs, mask, *self.info.tables)




def make_baseline(name: str, game: str, seed: int | None = None) -> Policy:
    """``"random"`` or ``"heuristic"`` for ``game``."""
    if name == "random":
        return RandomPolicy(seed)
    if name == "heuristic":
        return HeuristicPolicy(game)
    raise ValueError(f"unknown baseline {name!r}; baselines are {list(BASELINES)}")
