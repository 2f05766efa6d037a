"""Test-wide settings.

Hypothesis' per-example deadline (200 ms by default) is a wall-clock assertion: on a busy 2-core CI
machine, or when an example is the first to load a compiled kernel from the numba cache, a correct
example can exceed it. The tests assert behaviour, never time (docs/testing.md), so it is off.

The suite runs in one worker process per core (pytest-xdist, ``-n auto`` in pyproject.toml's addopts;
``pytest -n 0`` runs it in one process). Each worker, and the commands the tests start, then use one
thread for torch's and numpy's maths (``OMP_NUM_THREADS=1``, set before torch is imported): two workers
with two threads each on a 2-core machine would only fight over the cores.
"""
import os

from hypothesis import settings

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

settings.register_profile("tarocchini", deadline=None)
settings.load_profile("tarocchini")
