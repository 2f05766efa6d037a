"""Validated option sets for the games and their environments.

Every option is a field of a frozen dataclass with its default, its type and, where it has one, its
set of allowed values or its range. ``make_config(cls, options)`` builds one from user keyword
arguments and rejects unknown keys and bad values by name, saying what would be right::

    >>> make_config(PartitaConfig, {"deals_per_game": 0})
    Traceback (most recent call last):
    ValueError: option 'deals_per_game' = 0 is out of range for partita; expected an int in [1, 1000]
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .checks import plain_scalar


def option(default, *, choices=None, lo=None, hi=None, doc=""):
    """A config field with its allowed values (``choices``) or range (``lo``..``hi``) and a doc line."""
    return field(default=default, metadata={"choices": choices, "lo": lo, "hi": hi, "doc": doc})


_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


@dataclass(frozen=True)
class Config:
    """Base class: validation on construction; ``to_dict``/``describe`` for logs and docs."""

    game = "base"

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = plain_scalar(getattr(self, f.name))  # np.int64(800) is 800
            if f.type in ("float", float) and type(value) is int:  # an int given for a float is taken as that float
                value = float(value)
            object.__setattr__(self, f.name, value)
            _check(self.game, f, value)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes) -> Config:
        return make_config(type(self), {**self.to_dict(), **changes})

    @classmethod
    def describe(cls) -> str:
        """One line per option: name, default, allowed values, meaning (used in docs and --help)."""
        lines = []
        for f in dataclasses.fields(cls):
            m = f.metadata
            allowed = (
                " | ".join(map(str, m["choices"])) if m.get("choices")
                else f"[{m.get('lo')}, {m.get('hi')}]" if m.get("lo") is not None else f.type
            )
            lines.append(f"{f.name} = {f.default!r}  ({allowed})  {m.get('doc', '')}")
        return "\n".join(lines)


def _check(game: str, f: dataclasses.Field, value: Any) -> None:
    typ = _TYPES.get(f.type if isinstance(f.type, str) else f.type.__name__)
    m = f.metadata
    if typ is not None and (not isinstance(value, typ) or (typ is int and isinstance(value, bool))):
        raise ValueError(
            f"option {f.name!r} = {value!r} has the wrong type for {game}; expected {typ.__name__}"
        )
    if m.get("choices") is not None and value not in m["choices"]:
        raise ValueError(
            f"option {f.name!r} = {value!r} is not allowed for {game}; choose one of {list(m['choices'])}"
        )
    lo, hi = m.get("lo"), m.get("hi")
    if lo is not None and not (lo <= value <= hi):
        raise ValueError(
            f"option {f.name!r} = {value!r} is out of range for {game}; expected {f.type} in [{lo}, {hi}]"
        )


def make_config(cls: type[Config], options: dict[str, Any] | None) -> Config:
    """Build ``cls`` from ``options``; unknown keys and bad values raise ``ValueError`` by name."""
    return cls(**split_options(dict(options or {}), cls)[0])


def split_options(options: dict[str, Any], *classes: type[Config]) -> list[dict[str, Any]]:
    """Split one flat dict of options among several config classes; unknown keys raise by name."""
    out: list[dict[str, Any]] = []
    known: list[str] = []
    for cls in classes:
        fields = [f.name for f in dataclasses.fields(cls)]
        known += fields
        out.append({k: v for k, v in options.items() if k in fields})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for {classes[0].game}; valid options are {known}")
    return out


def game_and_env_configs(game_config: type[Config], options: dict[str, Any],
                         reward_scale: float | None = None) -> tuple[Config, EnvConfig]:
    """The rules options and the environment options (:class:`EnvConfig`) of one flat dict of options, as
    an env or a batched engine takes them; ``reward_scale``: the game's own default (an explicit option wins)."""
    game_opts, env_opts = split_options(options, game_config, EnvConfig)
    if reward_scale is not None:
        env_opts.setdefault("reward_scale", reward_scale)
    return make_config(game_config, game_opts), make_config(EnvConfig, env_opts)


@dataclass(frozen=True)
class EnvConfig(Config):
    """Options of the PettingZoo environments that are not rules of the game."""

    game = "environment"
    reward: str = option("deal", choices=("deal", "game"),
                         doc="'deal': each deal's score difference between the teams, scaled; "
                             "'game': only the game result (+1 win, -1 loss, 0 draw)")
    reward_scale: float = option(80.0, lo=1e-6, hi=1e9, doc="divisor of score differences in 'deal' rewards")
    episode: str = option("game", choices=("game", "deal"),
                          doc="an episode is a whole game, or one deal (reset deals the next one)")
    illegal_action: str = option("raise", choices=("raise", "terminate"),
                                 doc="'raise': ValueError and nothing changes; 'terminate': the game "
                                     "ends and the offender gets illegal_reward")
    illegal_reward: float = option(-1.0, lo=-1e9, hi=1e9, doc="reward of an illegal action under 'terminate'")
