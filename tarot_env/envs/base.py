"""The PettingZoo AEC wrapper shared by the three games: :class:`TarotAECEnv` turns a game's rules class
(a :class:`~tarot_env.engine.TrickGame` subclass) into an ``AECEnv``. Agents, spaces, masks, rewards
(``tarot_env.rewards``), episodes, bad input, infos and rendering (the whole table; ``render_view``: one
seat's, RULES.md H): docs/environments.md, "Conventions shared by every game".
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from ..checks import check_seed
from ..config import game_and_env_configs
from ..engine import TrickGame
from ..rewards import deal_rewards, final_info, game_rewards
from ..view import render_view


class ActionTypeError(TypeError, ValueError):
    """An action that is not an integer action id (float, string, bool, ``None`` …): a ``TypeError``, and a
    ``ValueError`` as every other bad action, so ``except ValueError`` around ``step`` catches them all."""


class TarotAECEnv(AECEnv):
    """Generic AEC environment over a ``TrickGame``; subclasses set ``Game`` and ``metadata``."""

    Game: type[TrickGame]
    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "is_parallelizable": False}
    # A game's own default for EnvConfig.reward_scale (None: EnvConfig's); an explicit option wins.
    default_reward_scale: float | None = None

    def __init__(self, render_mode: str | None = None, **options: Any):
        super().__init__()
        self.game_config, self.env_config = game_and_env_configs(self.Game.Config, options, self.default_reward_scale)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} is not supported; choose one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        G = self.Game
        self.possible_agents = [f"player_{i}" for i in range(G.num_players)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        low = np.zeros(G.OBS.size, dtype=np.float32)
        high = np.ones(G.OBS.size, dtype=np.float32)
        low[G.OBS.scores], high[G.OBS.scores] = -np.inf, np.inf  # cumulative scores are unbounded
        for name, bound in G.OBS_HIGH.items():  # sections that may exceed 1
            high[getattr(G.OBS, name)] = bound
        obs_space = spaces.Dict({
            "observation": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (G.num_actions,), dtype=np.int8),
        })
        act_space = spaces.Discrete(G.num_actions)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self.game: TrickGame | None = None
        self._zero_mask = np.zeros(G.num_actions, dtype=np.int8)
        self._action_names = tuple(G.action_name(a) for a in range(G.num_actions))
        # a game whose kernel writes the acting seat's observation with its mask (Ottocento's
        # observation_and_mask): written at each decision into this buffer, copied out by observe()
        self._with_mask = hasattr(G, "observation_and_mask")
        self._acting_obs = np.zeros(G.OBS.size, dtype=np.float32)
        self._acting_obs_ready = False  # the buffer holds the acting seat's observation of the game as it is

    # --- spaces (the same objects on every call) -------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    # --- episode ------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        seed = check_seed(seed)  # a bool, a negative number or a float is refused, naming the seed
        if seed is not None or self.game is None:
            self.game = self.Game(self.game_config, seed)
        elif self.game.game_over:
            self.game = self.game.next_game()
        # else: episode="deal" and the game goes on; the next deal is already dealt
        self._deals_seen = len(self.game.history)
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._paid = False  # whether the last step put rewards into self.rewards (cleared at the next)
        self._after_move()

    def _after_move(self) -> None:
        """Cache the acting player's mask and name its legal actions in its info."""
        g = self.game
        self.agent_selection = self.possible_agents[g.current]
        if self._with_mask:
            legal = g.observation_and_mask(self._acting_obs)
            self._acting_obs_ready = True
        else:
            legal = g.legal_mask()
        self._mask = legal.view(np.int8)  # bool and int8 share one byte per entry
        names = self._action_names
        self.infos[self.agent_selection] = {"legal_actions": [names[a] for a in legal.nonzero()[0].tolist()]}

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._require_reset("observe")
        seat = self.agent_name_mapping.get(agent)
        if seat is None:
            raise ValueError(f"unknown agent {agent!r}; the agents are {self.possible_agents}")
        g = self.game
        acting = (agent == self.agent_selection and not g.game_over
                  and not self.terminations.get(agent, True))
        return {
            "observation": self._acting_obs.copy() if acting and self._acting_obs_ready else g.observation(seat),
            "action_mask": self._mask.copy() if acting else self._zero_mask.copy(),
        }

    def state(self) -> np.ndarray:
        """The full-information vector (all hands, hidden discards …) for centralised critics only."""
        self._require_reset("state")
        return self.game.state_vector()

    def last(self, observe: bool = True):
        """PettingZoo's ``last()``, with a clear error before ``reset()`` or once every agent is removed."""
        if self.game is None or self.agent_selection not in self.terminations:
            self._require_reset("last", agent=True)
        agent = self.agent_selection
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent], self.terminations[agent],
                self.truncations[agent], self.infos[agent])

    # --- validation (the state is unchanged when any of these raises) --------------------------------
    def _require_reset(self, method: str, agent: bool = False) -> None:
        """``method`` refused before reset() and (``agent``) once every agent has ended and been stepped with None
        (so removed): the episode is over."""
        if self.game is None:
            raise ValueError(f"{method}() called before reset(): call env.reset() (or env.reset(seed=...)) "
                             f"first to deal a game")
        if agent and self.agent_selection not in self.terminations:
            raise ValueError(f"{method}() called after the episode ended: every agent has been removed "
                             f"(env.agents is empty); call env.reset() to start the next one")

    def _action_id(self, action) -> int:
        """``action`` (not a Python int: ``step`` takes those) as an int: a numpy integer or a 0-d integer array;
        never a bool."""
        if isinstance(action, (bool, np.bool_)) or (isinstance(action, np.ndarray) and action.dtype == bool):
            raise ActionTypeError(f"action {action!r} is a bool; an action is an integer id "
                                  f"0..{len(self._mask) - 1} (legal now: {self.game.describe_legal()})")
        try:
            return operator.index(action)
        except TypeError:
            pass
        hint = ""
        if action is None:
            hint = (f"; None only removes an agent whose game has ended, and {self.agent_selection} "
                    f"is still to act")
        elif isinstance(action, str):
            hint = "; to use a card or action name, pass env.unwrapped.game.parse_action(name)"
        elif isinstance(action, np.ndarray):
            hint = (f"; an array of shape {action.shape} is not one action id (pass a 0-d integer array "
                    f"or an int)")
        raise ActionTypeError(f"action {action!r} ({type(action).__name__}) is not an integer action id: "
                              f"pass an int or numpy integer 0..{len(self._mask) - 1}{hint} "
                              f"(legal now: {self.game.describe_legal()})") from None

    # --- step ---------------------------------------------------------------------------------------
    def step(self, action) -> None:
        if self.game is None or self.agent_selection not in self.terminations:
            self._require_reset("step", agent=True)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:  # PettingZoo: an ended agent is removed by stepping it with None
                how = "terminated" if self.terminations[agent] else "truncated"
                raise ValueError(f"{agent} has ended ({how}): step it with None to remove it, as "
                                 f"PettingZoo's agent_iter() loop does (got action {action!r}); once "
                                 f"every agent is removed, call env.reset() for the next episode")
            self._was_dead_step(action)
            return
        g = self.game
        mask = self._mask
        try:  # the action id of a legal action (an int: the common case, checked inline)
            a = action if type(action) is int else self._action_id(action)
            if not (0 <= a < len(mask) and mask[a]):
                self.game.check_action(a)  # raises the descriptive ValueError (out of range, illegal in this phase)
                raise ValueError(f"illegal action {a}")  # pragma: no cover - mask/game disagree
        except ValueError:  # ActionTypeError included
            if self.env_config.illegal_action == "raise":
                raise
            self._end_for_illegal(agent, action)
            return
        self._cumulative_rewards[agent] = 0.0
        if self._paid:  # most steps pay nothing: the rewards are cleared only after one that did
            for k in self.rewards:
                self.rewards[k] = 0.0
            self._paid = False
        before = self._deals_seen
        self._acting_obs_ready = False  # (until _after_move writes the next decision's)
        g.apply_unchecked(a)
        new_results = g.history[before:] if len(g.history) != before else ()
        if new_results or g.game_over:
            self._deals_seen = len(g.history)
            self._pay(new_results)
        if g.game_over or (self.env_config.episode == "deal" and new_results):
            # a game cut off by a cap (Ottocento's max_hands sets g.truncated) is a truncation
            ended = self.truncations if getattr(g, "truncated", False) else self.terminations
            last = g.history[-1] if g.history else None
            for k in self.agents:  # each seat's view of the last deal's record (tarot_env.rewards.final_info)
                ended[k] = True
                self.infos[k] = final_info(g.scores, g.winner, last, Game=type(g), seat=self.agent_name_mapping[k])
            self.agent_selection = self.possible_agents[(self.agent_name_mapping[agent] + 1)
                                                        % len(self.possible_agents)]
        else:
            self._after_move()
        if self._paid:
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _pay(self, new_results: list[dict]) -> None:
        """Add this step's team-shared rewards (``tarot_env.rewards``): each finished deal's
        ``deal_rewards`` (``reward="deal"``), or ``game_rewards`` once the game is over (``reward="game"``).
        (The rewards were cleared at the start of the step.)"""
        g, cfg = self.game, self.env_config
        if cfg.reward == "deal":
            paid = [deal_rewards(r["scores"], g.team_of, cfg.reward_scale).tolist() for r in new_results]
        else:
            paid = [game_rewards(g.winner, g.team_of).tolist()] if g.game_over else []
        for seats in paid:
            for agent in self.agents:
                self.rewards[agent] += seats[self.agent_name_mapping[agent]]
        self._paid = bool(paid)

    def _end_for_illegal(self, agent: str, action) -> None:
        for k in self.rewards:
            self.rewards[k] = 0.0
        self._cumulative_rewards[agent] = 0.0
        self.rewards[agent] = self.env_config.illegal_reward
        self._paid = True
        for k in self.agents:
            self.terminations[k] = True
            self.infos[k] = {"illegal_action": repr(action), "offender": agent}
        self._accumulate_rewards()

    # --- render -------------------------------------------------------------------------------------
    def render(self) -> str | None:
        """The whole table (every hand, every hidden discard): for spectators and debugging only; a
        player's view is :meth:`render_view`."""
        self._require_reset("render")
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = render_view(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def render_view(self, agent: str) -> str:
        """The table as ``agent`` knows it (RULES.md H): its own hand and discards, the public facts;
        never another hand's cards. Returned as text whatever the ``render_mode``."""
        if agent not in self.agent_name_mapping:
            raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
        if self.game is None:
            raise ValueError("render_view() before reset(): there is no table yet")
        return render_view(self.game, self.agent_name_mapping[agent])

    def close(self) -> None:
        pass
