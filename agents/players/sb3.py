"""Stable-Baselines3 models as players, and the MaskablePPO recipe of ``docs/sb3.md``.

* :class:`SB3Policy` wraps the policy network of an SB3 / sb3-contrib actor-critic (``MaskablePPO``,
  ``PPO``) trained on :class:`tarot_env.wrappers.SingleAgentEnv` as an :class:`agents.players.policy.Policy`:
  it sees the game's observation through :func:`tarot_env.wrappers.learner_observation` (the map the
  wrapper applies) and picks the most probable *legal* action (``greedy=False``: samples the masked
  softmax from its own seeded generator ``gen``). So it plays in the arena, ``agents.evaluation.evaluate``, the
  AEC env and human play like any other player.
* :func:`load_sb3_policy` reads an SB3 ``.zip`` **without unpickling anything**. An SB3 zip holds a
  JSON file ``data`` in which the objects JSON cannot hold (the policy class, the spaces, the learning
  rate schedule …) are cloudpickled, and ``policy.pth`` with the network weights. ``MaskablePPO.load``
  unpickles those objects, i.e. runs code from the file; here the JSON is parsed as text, the pickled
  entries are never decoded, only their readable descriptions are checked (the policy's module, the
  observation shape, the number of actions), ``policy_kwargs`` must be plain JSON (a model made with
  e.g. a custom ``activation_fn`` class has them pickled and is refused), and the weights are read with
  ``torch.load(weights_only=True)`` into a ``MaskableActorCriticPolicy`` built here. The registry's
  ``load_policy("sb3:PATH.zip", game)`` calls it.
* :func:`train` is the recipe: ``MaskablePPO("MlpPolicy")`` on ``make_vec_env`` of the game's
  single-agent Gymnasium id (``tarot_env.wrappers.GYM_IDS``), learner on a random seat with its
  partner's seat too, uniform random opponents, one deal per episode. Command line::

      python -m agents.players.sb3 --game partita --steps 150000 --seed 0 --out sb3/partita.zip
      python -m agents.evaluation.evaluate sb3:sb3/partita.zip --game partita --deals 1000   # vs random, 95% CI

Needs the ``sb3`` extra (``pip install -e ".[sb3]"``).
"""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

import tarot_env

from .policy import Policy

__all__ = ["RECIPE_ENV", "RECIPE_PPO", "SB3Policy", "load_sb3_policy", "main", "train"]

# Modules whose actor-critic policies share MaskableActorCriticPolicy's parameters for a flat
# Discrete action space ("MlpPolicy" of MaskablePPO and of PPO).
_POLICY_MODULES = ("sb3_contrib.common.maskable.policies", "stable_baselines3.common.policies")

# --- the recipe (docs/sb3.md) ------------------------------------------------------------------------
# Single-agent env: one deal per episode, the learner on a random seat (and its partner's: team=True,
# as it plays in the arena), uniform random opponents (opponents=None).
RECIPE_ENV: dict[str, dict[str, Any]] = {
    "partita": {"deals_per_game": 1, "seat": "random", "team": True},
    "ottocento": {"episode": "deal", "seat": "random", "team": True},
    "millone": {"episode": "deal", "seat": "random"},
}
# MaskablePPO settings: rollouts of 4 envs x 512 steps, 4 epochs of minibatches of 256, an undiscounted
# return (the only reward is the deal's score at its end), a little entropy bonus, two 256-unit layers.
RECIPE_PPO: dict[str, Any] = {
    "n_steps": 512, "batch_size": 256, "n_epochs": 4, "learning_rate": 3e-4, "gamma": 1.0,
    "gae_lambda": 0.95, "ent_coef": 0.01, "policy_kwargs": {"net_arch": [256, 256]},
}


class SB3Policy(Policy):
    """An SB3 actor-critic policy network playing ``game`` (see the module docstring)."""

    def __init__(self, policy, game: str, greedy: bool = True, seed: int | None = None, name: str = "sb3"):
        from tarot_env.wrappers import learner_observation

        self.policy = policy.eval()
        self.game = game
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(0 if seed is None else seed)
        self.name = name
        self._observe = learner_observation

    @classmethod
    def from_model(cls, model, game: str, **kwargs) -> SB3Policy:
        """From a live SB3 model (``MaskablePPO``/``PPO`` object), e.g. right after ``learn``."""
        return cls(model.policy, game, **kwargs)

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        m = torch.as_tensor(np.asarray(mask).astype(bool))
        if not bool(m.any(dim=1).all()):
            raise ValueError("a mask row has no legal action")
        o = torch.as_tensor(self._observe(self.game, obs), device=self.policy.device)
        logits = self.policy.get_distribution(o).distribution.logits.cpu()
        logits = logits.masked_fill(~m, -torch.inf)
        if self.greedy:
            return logits.argmax(dim=1).numpy()
        return torch.multinomial(torch.softmax(logits, dim=1), 1, generator=self.gen).squeeze(1).numpy()


def _readable(data: dict, key: str, path: str) -> dict:
    item = data.get(key)
    if not isinstance(item, dict):
        raise ValueError(f"SB3 model {path!r} has no {key!r} entry; is it an SB3 actor-critic zip?")
    return item


def load_sb3_policy(path: str | os.PathLike, game: str, *, options: dict | None = None,
                    seed: int | None = None, greedy: bool = True) -> SB3Policy:
    """An :class:`SB3Policy` from an SB3 ``.zip``, weights only (nothing is unpickled; module docstring).

    Refused with ``ValueError``: a file that is not an SB3 zip, a policy that is not an actor-critic
    MLP (``MaskablePPO``/``PPO`` ``"MlpPolicy"``), pickled ``policy_kwargs``, and a model whose
    observation or action size differs from ``game``'s environment (with ``options``).
    """
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from ..spec import game_sizes

    p = str(path)
    if not Path(p).is_file():
        raise ValueError(f"SB3 model {p!r} does not exist")
    try:
        with zipfile.ZipFile(p) as z:
            data = json.loads(z.read("data"))
            weights = z.read("policy.pth")
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p!r} is not an SB3 model zip (with 'data' and 'policy.pth'): {e}") from None
    module = _readable(data, "policy_class", p).get("__module__")
    if module not in _POLICY_MODULES:
        raise ValueError(f"SB3 model {p!r} has a policy from {module!r}; only the actor-critic MLP policies "
                         f"of MaskablePPO/PPO ({', '.join(_POLICY_MODULES)}) are read")
    kwargs = data.get("policy_kwargs", {})
    if not isinstance(kwargs, dict) or ":serialized:" in kwargs:
        raise ValueError(f"SB3 model {p!r} has pickled policy_kwargs (e.g. an activation_fn class); they are "
                         f"not unpickled. Train with JSON-only policy_kwargs such as {{'net_arch': [256, 256]}}")
    try:
        obs_size = int(np.prod(_readable(data, "observation_space", p)["_shape"]))
        num_actions = int(_readable(data, "action_space", p)["n"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"SB3 model {p!r}: its observation space is not a flat Box or its action space "
                         f"not a Discrete") from None
    want_obs, want_actions = game_sizes(game, options)
    for key, have, want in (("obs_size", obs_size, want_obs), ("num_actions", num_actions, want_actions)):
        if have != want:
            raise ValueError(f"SB3 model {p!r} has {key}={have}, but {game} has {key}={want}: it was "
                             f"trained on another game or another version of the environment")
    try:
        state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    except Exception as e:  # truncated / not a torch file / not weights only
        raise ValueError(f"SB3 model {p!r}: policy.pth is not a plain weights file: {type(e).__name__}: {e}") from None
    obs_space = spaces.Box(-1.0, 1.0, (obs_size,), dtype=np.float32)  # bounds do not enter an MLP
    try:
        policy = MaskableActorCriticPolicy(obs_space, spaces.Discrete(num_actions), lambda _: 0.0, **kwargs)
        policy.load_state_dict(state)
    except (TypeError, RuntimeError) as e:
        raise ValueError(f"SB3 model {p!r} does not fit an actor-critic MLP policy: {e}") from None
    return SB3Policy(policy, game, greedy=greedy, seed=seed, name=Path(p).stem)


# --------------------------------------------------------------------------------------------------
# the recipe
# --------------------------------------------------------------------------------------------------
def train(game: str = "partita", steps: int = 150_000, seed: int = 0, out: str | os.PathLike = "sb3/partita.zip",
          n_envs: int = 4, progress: bool = False, **ppo: Any):
    """MaskablePPO on the single-agent wrapper with :data:`RECIPE_ENV` / :data:`RECIPE_PPO`; saves ``out``.

    ``ppo`` overrides recipe settings. Returns the trained model.
    """
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    from tarot_env.wrappers import GYM_IDS

    if game not in RECIPE_ENV:
        raise ValueError(f"unknown game {game!r}; games are {sorted(RECIPE_ENV)}")
    env = make_vec_env(GYM_IDS[game], n_envs=n_envs, seed=seed, env_kwargs=RECIPE_ENV[game])
    model = MaskablePPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **{**RECIPE_PPO, **ppo})
    model.learn(total_timesteps=steps, progress_bar=progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save(out)
    env.close()
    return model


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.players.sb3 --game partita --steps 150000 --seed 0 --out sb3/partita.zip``."""
    import argparse
    import time

    p = argparse.ArgumentParser(description="Train MaskablePPO on the single-agent wrapper (docs/sb3.md)")
    p.add_argument("--game", default="partita", choices=sorted(tarot_env.GAMES))
    p.add_argument("--steps", type=int, default=150_000, help="learner decisions (env steps, all envs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--envs", type=int, default=4, help="environments in the DummyVecEnv")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default=None, help="model zip (default sb3/<game>.zip)")
    ns = p.parse_args(argv)
    torch.set_num_threads(ns.threads)
    out = ns.out or f"sb3/{ns.game}.zip"
    t = time.time()
    train(ns.game, ns.steps, ns.seed, out, ns.envs)
    print(f"saved {out} ({ns.steps} steps, {time.time() - t:.0f} s); evaluate it with\n"
          f"  python -m agents.evaluation.evaluate sb3:{out} --game {ns.game} --deals 1000")


if __name__ == "__main__":
    main()
