"""Single-agent Gymnasium wrappers: the learner holds one seat (or one team), given policies the rest.

:class:`SingleAgentEnv` (registered as ``tarocchini/<game>-single-<version>``, :data:`GYM_IDS`): its seat,
opponents, rewards, illegal actions, bounded observation (:func:`learner_observation`) and action masks are
documented in docs/arena.md ("Playing against fixed opponents") and docs/sb3.md. No torch: policies are
duck-typed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from . import ENV_IDS, GAMES, game_info, game_key
from .checks import check_seed


def learner_observation(game: str, obs: np.ndarray) -> np.ndarray:
    """The wrapper's observation from the game's vector(s) ``obs[..., O]`` (a float32 copy).

    The cumulative scores (``OBS.scores``, the one unbounded section of the game's vector) become
    ``x / (1 + |x|)`` in (-1, 1); everything else is already in [0, 1] and is kept as is. A policy
    trained on :class:`SingleAgentEnv` must see its observations through this map wherever it plays.
    """
    o = np.array(obs, dtype=np.float32)  # a copy
    sc = game_info(game).rules_class().OBS.scores
    o[..., sc] = o[..., sc] / (1.0 + np.abs(o[..., sc]))
    return o


def text_to_rgb(text: str) -> np.ndarray:
    """uint8 ``[H, W, 3]``: ``text`` drawn black on white with Pillow's default font."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:  # pragma: no cover - Pillow comes with matplotlib (SB3, the 'train' extra)
        raise ImportError("render_mode='rgb_array' draws the table with Pillow: pip install pillow") from None
    font = ImageFont.load_default()
    lines = text.splitlines() or [""]
    height = max(font.getbbox("Ag|")[3], 1) + 4
    width = max(int(font.getlength(line)) for line in lines) + 16
    img = Image.new("RGB", (max(width, 32), height * len(lines) + 12), "white")
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((8, 6 + i * height), line, fill="black", font=font)
    return np.asarray(img, dtype=np.uint8)


def _as_actor(p) -> Callable[[np.ndarray, np.ndarray], int]:
    if hasattr(p, "act"):
        return lambda o, m: int(p.act(o, m))
    if callable(p):
        return lambda o, m: int(p(o, m))
    raise TypeError(f"an opponent must have act(obs, mask) or be callable f(obs, mask); got {type(p).__name__}")


class SingleAgentEnv(gymnasium.Env):
    """One learner against fixed policies in a tarot game (see the module docstring)."""

    # render_fps: the pace of "human" rendering (a table a second is readable); the others return frames
    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 1}

    def __init__(self, game: str = "partita", opponents: Any = None, seat: int | str = 0,
                 team: bool = False, render_mode: str | None = None, **options: Any):
        self.game_name = game_key(game)  # a removed version's id raises, naming the current id
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; choose one of "
                             f"{self.metadata['render_modes']} or None")
        # Gymnasium convention: a bad action ends the episode (reward illegal_reward, -1) instead of
        # raising; pass illegal_action="raise" for the AEC env's ValueError.
        options.setdefault("illegal_action", "terminate")
        aec_mode = "ansi" if render_mode == "rgb_array" else render_mode
        self.aec = GAMES[self.game_name].env_class()(render_mode=aec_mode, **options)
        self.render_mode = render_mode
        P = len(self.aec.possible_agents)
        self.num_players = P
        if not (seat == "random" or (isinstance(seat, (int, np.integer)) and 0 <= int(seat) < P)):
            raise ValueError(f"seat must be 0..{P - 1} or 'random', got {seat!r}")
        self.seat_option = seat
        self.team = bool(team)
        agent0 = self.aec.possible_agents[0]
        box = self.aec.observation_space(agent0)["observation"]
        low, high = box.low.copy(), box.high.copy()
        sc = self.aec.Game.OBS.scores
        low[sc], high[sc] = -1.0, 1.0  # learner_observation squashes the unbounded scores
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self.action_space = self.aec.action_space(agent0)
        self._opponents = self._build_opponents(opponents, P)
        self.seat = 0 if seat == "random" else int(seat)
        self._mask = np.zeros(self.action_space.n, dtype=bool)
        self._current = self.seat
        self._done = True

    def _build_opponents(self, opponents, P) -> dict[int, Callable]:
        if isinstance(opponents, dict):
            per_seat = {int(k): v for k, v in opponents.items()}
        elif isinstance(opponents, (list, tuple)):
            if len(opponents) != P:
                raise ValueError(f"opponents list must have one entry per seat ({P}); got {len(opponents)}")
            per_seat = dict(enumerate(opponents))
        else:
            per_seat = {s: opponents for s in range(P)}
        return {s: (self._uniform if per_seat.get(s) is None else _as_actor(per_seat[s])) for s in range(P)}

    def _uniform(self, obs, mask) -> int:
        """Uniform legal play from the wrapper's generator (reseeded by ``reset(seed=...)``)."""
        legal = np.flatnonzero(mask)
        return int(legal[self.np_random.integers(len(legal))])

    # --- seats -----------------------------------------------------------------------------------
    @property
    def learner_seats(self) -> tuple[int, ...]:
        if self.team and self.num_players == 4:
            return (self.seat, (self.seat + 2) % 4)
        return (self.seat,)

    @property
    def game(self):
        """The rules object of the current game (for inspection; do not act on it directly)."""
        return self.aec.game

    # --- gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=check_seed(seed))  # a bool, negative or float seed refused, naming the seed
        # a game over before the learner's first decision (e.g. a Millone claim): nothing to learn from; the next
        for skipped in range(1000):  # noqa: B007 (counted after the loop) - game is dealt from the same generator
            if self.seat_option == "random":
                self.seat = int(self.np_random.integers(self.num_players))
            self.aec.reset(seed=int(self.np_random.integers(2**62)))
            _, terminated, truncated = self._advance()
            if not (terminated or truncated):
                break
        else:  # pragma: no cover - no rules end 1000 games in a row this way
            raise RuntimeError("1000 games in a row ended before the learner's first decision")
        self._done = False
        info = self._info()
        if skipped:
            info["skipped_games"] = skipped
        return self._obs(), info

    def step(self, action):
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        a = self.aec
        acting = a.agent_selection  # a learner seat (_advance stops only there)
        a.step(self._well_formed(action))  # illegal_action applies to well-formed illegal actions only
        reward = float(a.rewards.get(acting, 0.0))  # team-shared; the offender's for an illegal action
        more, terminated, truncated = self._advance()
        reward += more
        self._done = terminated or truncated
        return self._obs(), reward, terminated, truncated, self._info()

    def _well_formed(self, action) -> int:
        """``action`` as an int in ``[0, action_space.n)``; a ``ValueError`` (nothing changes) for a bool, a float
        (even 3.0), a string, an array of several values or an id out of range, whatever ``illegal_action``
        says: a broken action pipeline fails loudly instead of looking like a weak policy."""
        n = int(self.action_space.n)
        a = action
        if isinstance(a, np.ndarray) and a.ndim == 0:
            a = a[()]
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ValueError(f"action must be an integer action id in [0, {n}); got {action!r} "
                             f"({type(action).__name__})")
        if not 0 <= a < n:
            raise ValueError(f"action {int(a)} is out of range: action ids are 0..{n - 1}")
        return int(a)

    def action_masks(self) -> np.ndarray:
        """bool[num_actions]: the learner's legal actions now (all False once the episode is over)."""
        return self._mask.copy()

    def render(self):
        text = self.aec.render()
        if self.render_mode == "rgb_array":
            return text_to_rgb(text)
        return text

    def close(self):
        self.aec.close()

    # --- internals -------------------------------------------------------------------------------
    def _over(self) -> tuple[bool, bool]:
        a = self.aec
        primary = a.possible_agents[self.learner_seats[0]]
        return bool(a.terminations[primary]), bool(a.truncations[primary])

    def _advance(self) -> tuple[float, bool, bool]:
        """Let the opponents play until the learner decides or the episode ends."""
        a = self.aec
        learners = {a.possible_agents[s] for s in self.learner_seats}
        primary = a.possible_agents[self.learner_seats[0]]
        reward = 0.0
        while True:
            term, trunc = self._over()
            if term or trunc:
                self._mask[:] = False
                self._current = self.learner_seats[0]
                return reward, term, trunc
            agent = a.agent_selection
            seat = a.agent_name_mapping[agent]
            o = a.observe(agent)
            if agent in learners:
                self._mask = o["action_mask"].astype(bool)
                self._current = seat
                return reward, False, False
            a.step(self._opponents[seat](o["observation"], o["action_mask"]))
            reward += float(a.rewards.get(primary, 0.0))

    def _obs(self) -> np.ndarray:
        return learner_observation(self.game_name, self.aec.game.observation(self._current))

    def _info(self) -> dict:
        info: dict[str, Any] = {"seat": self._current, "action_mask": self._mask.copy()}
        if any(self._over()):
            g = self.aec.game
            team = g.team_of[self.seat]
            info["scores"] = g.scores.tolist()
            info["score_margin"] = float(g.scores[team] - g.scores[1 - team])
            info["winner"] = g.winner
        return info


# Gymnasium ids, versioned with the AEC ids (ENV_IDS): gymnasium.make("tarocchini/partita-single-v1",
# opponents=..., seat=0, ...); gymnasium itself refuses an older version, naming the current one
GYM_IDS = {k: "{}-single-{}".format(*v.rsplit("-", 1)) for k, v in ENV_IDS.items()}


def _register() -> None:
    for key, gid in GYM_IDS.items():
        if gid not in gymnasium.registry:
            gymnasium.register(id=gid, entry_point="tarot_env.wrappers:SingleAgentEnv",
                               kwargs={"game": key}, disable_env_checker=False)


_register()

__all__ = ["SingleAgentEnv", "learner_observation", "text_to_rgb", "GYM_IDS"]
