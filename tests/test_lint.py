"""The whole repository passes ``ruff check`` with the settings in pyproject.toml ([tool.ruff]), so ``pytest``
(what CI runs) also runs the linter. Skipped where ruff is not installed (it is in the ``dev`` extra)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                                reason="ruff is not installed (pip install -e .[dev])")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean_over_the_repository():
    r = _ruff(".")
    assert r.returncode == 0, f"`ruff check .` found problems (fix them; `ruff check --fix .` for style):\n" \
                              f"{r.stdout}{r.stderr}"


def test_the_project_settings_catch_an_unused_import_and_a_long_line(tmp_path):
    """The check above can fail: with the project's settings ruff reports what they select."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\nX = '" + "x" * 130 + "'\n")
    r = _ruff("--config", str(ROOT / "pyproject.toml"), str(bad))
    assert r.returncode == 1
    assert "F401" in r.stdout and "E501" in r.stdout
