"""What a user expects of the package (issue #35, item 6): typed packages, project links, a changelog that
names every environment and shipped policy, an extra that opens the notebooks, no stray files at the root."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import tarot_env

ROOT = Path(__file__).resolve().parent.parent
tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_both_packages_are_typed_and_ship_their_marker():
    data = PROJECT["tool"]["setuptools"]["package-data"]
    for package in ("tarot_env", "agents"):
        assert (ROOT / package / "py.typed").is_file()
        assert "py.typed" in data[package]


def test_the_project_names_its_links():
    urls = PROJECT["project"]["urls"]
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


def test_the_changelog_names_every_environment_and_shipped_policy():
    text = (ROOT / "CHANGELOG.md").read_text()
    for env_id in tarot_env.ENV_IDS.values():
        assert f"`{env_id}`" in text, env_id
    for policy in sorted((ROOT / "agents" / "pretrained").glob("*.pt")):
        assert f"`{policy.name}`" in text, policy.name


def test_an_extra_opens_the_notebooks_and_the_readme_says_how():
    extra = PROJECT["project"]["optional-dependencies"]["notebooks"]
    assert any(re.match(r"(jupyterlab|notebook)\b", d) for d in extra)
    assert 'pip install torch==2.13.0 -e ".[train,notebooks]" && jupyter lab notebooks/' in \
        (ROOT / "README.md").read_text()


def test_nothing_but_the_project_s_own_files_at_the_root():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    if not tracked:
        pytest.skip("not a git checkout")
    root = {line.split("/")[0] for line in tracked.splitlines()}
    allowed = {".gitignore", ".ci", "CHANGELOG.md", "LICENSE", "README.md", "pyproject.toml", "agents", "configs",
               "docs", "notebooks", "scripts", "tarot_env", "tarot_web", "tests", "shared", ".github"}
    assert root <= allowed, sorted(root - allowed)


def test_benchmark_results_are_written_under_runs_not_at_the_root():
    from agents.bench import build_parser

    p = build_parser()
    for sub in ("batched", "env"):
        ns = p.parse_args([sub])
        assert ns.json.startswith("runs/"), (sub, ns.json)


def test_the_version_is_the_package_s():
    r = subprocess.run([sys.executable, "-m", "agents", "--version"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"python -m agents {tarot_env.__version__}"
