"""The compiled kernels' cache is keyed by the package source (tarot_env/_numba_cache.py): numba checks
a cached kernel against its own file only, so a change to a function it inlines from another file
(``kernels.legal_play`` in a batched engine) must still give a fresh cache."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tarot_env import _numba_cache

ROOT = Path(__file__).resolve().parent.parent


def test_digest_changes_with_any_source_file(tmp_path):
    pkg = tmp_path / "tarot_env"
    shutil.copytree(_numba_cache.PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = _numba_cache.source_digest(pkg)
    assert before == _numba_cache.source_digest(_numba_cache.PACKAGE)  # content, not location
    kernels = pkg / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# a change in another file than the engine's\n")
    assert _numba_cache.source_digest(pkg) != before


def _cache_dir_seen(env: dict) -> str:
    code = ("import tarot_env, numba; from tarot_env.kernels import legal_play; "
            "print(numba.config.CACHE_DIR); print(legal_play._cache._cache_path)")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return out


def test_kernels_cache_under_the_digest_directory_unless_the_user_sets_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    config_dir, kernel_dir = _cache_dir_seen(env)
    expected = str(tmp_path / "xdg" / "tarocchini-rl" / "numba" / _numba_cache.source_digest())
    assert config_dir == expected and kernel_dir.startswith(expected)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    config_dir, kernel_dir = _cache_dir_seen(env)
    assert config_dir == str(tmp_path / "mine") and kernel_dir.startswith(str(tmp_path / "mine"))
