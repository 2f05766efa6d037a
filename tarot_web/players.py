"""The players a page may seat, by spec, and the cap on a searching player's thinking time.

A page (an HTTP client) may ask for the named players (``agents.players.registry.named_players``: ``random``,
``heuristic``, ``ppo`` …), the search players ``pimc[:...]`` / ``ppo+pimc[:...]`` whose rollout and
prior are named players too, ``human`` for its own seat, and the extra specs (checkpoint paths) that the
person who started the server named on its command line. A path sent by a page is refused: a client
never makes the server open a file of its choice. A search's ``time`` is capped at ``think_time``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agents.players.registry import is_search_name, load_policy, named_players, policy_label

HUMAN = "human"


@dataclass
class PlayerRules:
    """What the server accepts as a player spec: ``extra`` (paths given on its command line) and the
    seconds a searching player may think per decision (``think_time``)."""

    think_time: float = 2.0
    extra: tuple[str, ...] = ()
    _networks: dict = field(default_factory=dict)  # (spec, game) -> a shared network policy (stateless)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def allowed(self) -> list[str]:
        """The specs a page may choose from (the search with any ``:options``)."""
        return [HUMAN, *named_players(), "pimc", "ppo+pimc", *self.extra]

    def check(self, spec: str) -> str:
        """``spec`` if a page may seat it, else ``ValueError`` naming the allowed ones."""
        if spec == HUMAN or spec in named_players() or spec in self.extra:
            return spec
        if is_search_name(spec):
            self._search_options(spec)
            return spec
        raise ValueError(f"unknown player {spec!r}; players are {', '.join(self.allowed())} "
                         f"(pimc and ppo+pimc take :worlds=N,rollout=R,time=S,top_k=K)")

    def _search_options(self, spec: str) -> dict:
        """The search's keyword arguments, its time capped, its rollout and prior named players only."""
        from agents.players.pimc import parse_pimc_name

        kw = parse_pimc_name(spec)
        for key in ("rollout", "prior"):
            if key in kw and kw[key] not in named_players():
                raise ValueError(f"{spec!r}: {key}={kw[key]} is not a named player "
                                 f"({', '.join(named_players())})")
        if "engine" in kw and kw["engine"] not in ("auto", "vector", "rules"):
            raise ValueError(f"{spec!r}: engine must be auto, vector or rules")
        if not 1 <= kw.get("worlds", 64) <= 4096:
            raise ValueError(f"{spec!r}: worlds must be 1..4096")
        kw["time_limit"] = min(kw.get("time_limit") or self.think_time, self.think_time)
        if not kw["time_limit"] > 0:
            raise ValueError(f"{spec!r}: time must be > 0 seconds")
        return kw

    def load(self, spec: str, game: str, options: dict, seed: int):
        """The policy of a checked ``spec`` for ``game`` (a network is loaded once and shared)."""
        if is_search_name(spec):
            from agents.players.pimc import PIMCPolicy

            return PIMCPolicy(game, seed=seed, **self._search_options(spec))
        if spec in named_players() and spec != "ppo":
            return load_policy(spec, game, options=options, seed=seed)
        key = (spec, game, tuple(sorted(options.items())))
        with self._lock:
            if key not in self._networks:
                self._networks[key] = load_policy(spec, game, options=options, seed=seed)
            return self._networks[key]


def label(spec: str) -> str:
    """How a seat's player is named on the table and in the log."""
    return "you" if spec == HUMAN else policy_label(spec)


__all__ = ["HUMAN", "PlayerRules", "is_search", "label", "named_players"]


def is_search(spec: str) -> bool:
    return is_search_name(spec)
