"""Batched self-play engines: ``num_envs`` games stepped together with numpy (issue #5).

```python
import numpy as np, tarot_env
venv = tarot_env.make_vec("partita", num_envs=4096, seed=0)
out = venv.reset()
rng = np.random.default_rng(0)
for _ in range(1000):
    # any policy; here uniform over each row's legal actions
    actions = (rng.random(out.mask.shape) * out.mask).argmax(1)
    out = venv.step(actions)            # out.seat, out.obs, out.mask, out.rewards, out.done, out.info
```

Row ``i`` plays exactly the registered AEC environment's game of seed ``venv.row_seeds[i]`` (and, after
each automatic reset, that game's ``next_game()``): same observations, masks and rewards, checked step
by step by ``tests/test_vector_partita.py``.
"""
from __future__ import annotations

import importlib
from typing import Any

from .base import VecEnv, VecStep, row_seeds

# game name -> "module:class"; Ottocento and Millone add one line each when their engines exist
_ENGINES = {
    "partita": "tarot_env.vector.partita:PartitaVec",
}


def make_vec(game: str, num_envs: int, seed: int | None = None, **config: Any) -> VecEnv:
    """A batched engine of ``game`` (``"partita"`` or its env id ``"tarocchini/partita-v0"``).

    ``config``: the game's rule options and the env options (``reward``, ``reward_scale``,
    ``episode``) exactly as for the AEC environment, plus ``copy_outputs`` (default False: the
    returned arrays are reused buffers, valid until the next step). Unknown names raise ValueError.
    """
    key = game.split("/")[-1].rsplit("-v", 1)[0] if "/" in game else game
    if key not in _ENGINES:
        raise ValueError(f"no batched engine for game {game!r}; available: {sorted(_ENGINES)}")
    module, cls = _ENGINES[key].split(":")
    return getattr(importlib.import_module(module), cls)(num_envs, seed, **config)


__all__ = ["make_vec", "VecEnv", "VecStep", "row_seeds"]
