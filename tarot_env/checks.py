"""Checks of user input shared by the environments, the batched engines and the trainer: seeds, numpy
scalars as option values, and sizes that cannot fit in memory (refused up front, with the estimate, not a
``MemoryError`` a minute later).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

GiB = 1 << 30


def check_seed(seed: Any, what: str = "seed") -> int | None:
    """``seed`` as a Python int (or None); a ``ValueError`` naming ``what`` for a bool (``True`` is not seed 1),
    a negative number, a float or any other type (numpy's own messages do not say "seed")."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)):
        raise ValueError(f"{what} must be an integer >= 0 or None, not a bool ({seed!r})")
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"{what} must be an integer >= 0 or None; got {seed!r} ({type(seed).__name__})")
    if seed < 0:
        raise ValueError(f"{what} must be an integer >= 0 or None; got {int(seed)}")
    return int(seed)


def plain_scalar(value: Any) -> Any:
    """A numpy scalar (``np.int64(800)``, ``np.bool_(True)``, ``np.float32(0.5)``, ``np.str_``) as the Python
    value it holds; anything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def available_bytes() -> int | None:
    """The memory this machine can still give (Linux: ``MemAvailable``; else the physical memory), or None
    when it cannot be told."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_fits(what: str, nbytes: int, advice: str) -> None:
    """A ``ValueError`` when ``nbytes`` (a lower bound of what ``what`` needs) is more than the memory
    available; the message gives both figures and ``advice``."""
    have = available_bytes()
    if have is not None and nbytes > have:
        raise ValueError(f"{what} needs at least {nbytes / GiB:,.1f} GiB of memory, more than the "
                         f"{have / GiB:,.1f} GiB available on this machine: {advice}")


def check_vec_fits(game: str, num_envs: Any, observe: Any = True) -> None:
    """``make_vec(game, num_envs)`` refused up front when its rows cannot fit in memory (a ``num_envs`` that
    is not a count is left to the engine's own check)."""
    if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        return
    from .games import GAMES

    G = GAMES[game].rules_class()  # a lower bound of a row: its observation (float32), mask, rewards and row seed
    row = (4 * G.OBS.size if observe else 0) + G.num_actions + 2 * 8 * G.num_players + 40
    check_fits(f"make_vec({game!r}, {int(num_envs):,})", int(num_envs) * row,
               f"ask for fewer games (about {row:,} bytes a row at least)")
