"""tarocchini-rl: PettingZoo environments for the Italian tarot games Partita, Ottocento and Millone.

Importing the package registers the environments in PettingZoo's registry::

    import pettingzoo, tarot_env
    env = pettingzoo.make("aec", "tarocchini/partita-v0")
"""
from __future__ import annotations

import pettingzoo

from .cards import BOLOGNESE, FRENCH54
from .config import EnvConfig, make_config
from .vector import make_vec  # batched engines (issue #5)

__version__ = "0.1.0"

ENV_IDS = {
    "partita": "tarocchini/partita-v0",
    "millone": "tarocchini/millone-v0",
    "ottocento": "tarocchini/ottocento-v0",
}
_ENTRY_POINTS = {
    "tarocchini/partita-v0": "tarot_env.envs.partita:env",
    "tarocchini/millone-v0": "tarot_env.envs.millone:env",
    "tarocchini/ottocento-v0": "tarot_env.envs.ottocento:env",
}


def _register() -> None:
    for env_id, entry in _ENTRY_POINTS.items():
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point=entry)


_register()

__all__ = ["BOLOGNESE", "FRENCH54", "ENV_IDS", "EnvConfig", "make_config", "make_vec", "__version__"]
