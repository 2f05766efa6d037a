"""The batched API (:class:`VecEnv`) over one AEC environment per row, stepped in a Python loop: the reference
path at the AEC loop's speed, ``make_vec(..., engine="loop")`` for every game of ``tarot_env.GAMES``. Row ``i``
is the AEC environment reset with ``seed=row_seeds[i]`` and, after each episode, ``reset()``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..games import GAMES
from ..rewards import final_info
from .base import VecEnv


class LoopVecEnv(VecEnv):
    """``num_envs`` AEC environments of one game behind the batched API."""

    checkpointable = False  # the rows' AEC environments are not in get_state()

    def __init__(self, num_envs: int, seed: int | None = None, *, game: str, **options: Any):
        """``game``: a key of ``tarot_env.GAMES``; ``options`` as for ``make_vec``."""
        if game not in GAMES:
            raise ValueError(f"unknown game {game!r}; games are {sorted(GAMES)}")
        self.game = game
        self.EnvClass = GAMES[game].env_class()
        self.Game = self.EnvClass.Game
        self.default_reward_scale = getattr(self.EnvClass, "default_reward_scale", None)
        super().__init__(num_envs, seed, **options)  # obs_format="sparse": the dense rows converted (_result)
        self.envs = [self.EnvClass(**self.config.to_dict(), **self.env_config.to_dict()) for _ in range(num_envs)]
        self.agents = self.envs[0].possible_agents
        self._truncated = np.zeros(self.num_envs, dtype=bool)
        self._final: list[dict | None] = [None] * self.num_envs

    def _reset_all(self) -> None:
        for e, s in zip(self.envs, self.row_seeds):
            e.reset(seed=s)
        self._truncated[:] = False
        self._final = [None] * self.num_envs

    def _apply(self, a: np.ndarray) -> None:
        self._dirty = True  # rewards are copied from every env at every step
        self._truncated[:] = False
        rew = self._step_rew
        for b, e in enumerate(self.envs):
            e.step(int(a[b]))
            r = e.rewards
            for i, agent in enumerate(self.agents):
                rew[b, i] = r[agent]
            term, trunc = all(e.terminations.values()), all(e.truncations.values())
            if term or trunc:
                self._done[b] = True
                self._truncated[b] = trunc
                g = e.game  # the full record, not one seat's view of it
                self._final[b] = final_info(g.scores, g.winner, g.history[-1] if g.history else None)
                e.reset()

    def _encode(self) -> None:
        for b, e in enumerate(self.envs):
            agent = e.agent_selection
            self._seat[b] = e.agent_name_mapping[agent]
            o = e.observe(agent)
            self._obs[b] = o["observation"]
            self._mask[b] = o["action_mask"]

    def _info_arrays(self) -> dict[str, np.ndarray]:
        return {"truncated": self._truncated}

    def _state_into(self, out: np.ndarray) -> None:
        for b, e in enumerate(self.envs):
            out[b] = e.state()

    def final_info(self, row: int) -> dict[str, Any]:
        if self._final[row] is None:
            raise ValueError(f"row {row} has not finished an episode yet")
        return self._final[row]

