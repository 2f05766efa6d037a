"""Where numba keeps the compiled kernels: one cache per version of this package's source.

The rules kernels (``tarot_env/kernels.py``, ``rules/*``, ``vector/*``) are ``@njit(cache=True)``:
compiled on first use (tens of seconds for all three batched engines, once), then loaded from disk.
numba checks a cached kernel against its *own* source file only, so a kernel that inlines a function
from another file (a batched engine calling ``kernels.legal_play``) would keep running the old code
after that other file changed. To rule that out, the cache lives in a directory named after a digest
of every ``.py`` file of the package: any change to the source gives a fresh cache.

The directory is ``$XDG_CACHE_HOME/tarocchini-rl/numba/<digest>`` (default ``~/.cache/...``). Setting
``NUMBA_CACHE_DIR`` yourself overrides it (numba then uses your directory as usual); otherwise it is
set for this process (and so inherited by its subprocesses, e.g. ``torchrun``'s ranks). This must run
before any kernel is defined, so ``tarot_env/__init__.py`` calls :func:`configure` first.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def source_digest(root: Path = PACKAGE) -> str:
    """16 hex digits of a SHA-256 over the relative path and bytes of every ``.py`` file under ``root``."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_dir(root: Path = PACKAGE) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tarocchini-rl" / "numba" / source_digest(root)


def configure() -> str | None:
    """Point numba's cache at :func:`cache_dir` unless ``NUMBA_CACHE_DIR`` is set; returns the directory."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    path = str(cache_dir())
    numba = sys.modules.get("numba")
    if numba is not None:  # already imported: numba read its environment then
        numba.config.CACHE_DIR = path
    else:  # read by numba when it is imported (so ``import tarot_env`` does not import numba)
        os.environ["NUMBA_CACHE_DIR"] = path
    return path
