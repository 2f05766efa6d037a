"""Test-wide settings.

Hypothesis' per-example deadline (200 ms by default) is a wall-clock assertion: on a busy 2-core CI
machine, or when an example is the first to load a compiled kernel from the numba cache, a correct
example can exceed it. The tests assert behaviour, never time (docs/testing.md), so it is off.
"""
from hypothesis import settings

settings.register_profile("tarocchini", deadline=None)
settings.load_profile("tarocchini")
