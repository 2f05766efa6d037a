"""The arena: duplicate deals, determinism, the worker split, CI and rating arithmetic, outputs, CLI."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from agents.arena import bootstrap_ci, bradley_terry, main, run_arena, write_outputs


# --- arithmetic on known cases -------------------------------------------------------------------------

def test_bootstrap_ci_of_a_constant_is_that_constant_and_is_reproducible():
    assert bootstrap_ci(np.full(50, 3.5), 500, seed=1) == (3.5, 3.5)
    x = np.random.default_rng(0).normal(size=80)
    assert bootstrap_ci(x, 800, seed=4) == bootstrap_ci(x, 800, seed=4)


def test_bootstrap_ci_matches_the_normal_interval_on_a_two_point_sample():
    x = np.array([0.0, 1.0] * 200)  # mean 0.5, sd 0.5: normal 95% CI 0.5 ± 1.96 * 0.5 / 20 = ± 0.049
    lo, hi = bootstrap_ci(x, 4000, seed=0)
    assert lo == pytest.approx(0.5 - 0.049, abs=0.008)
    assert hi == pytest.approx(0.5 + 0.049, abs=0.008)


def test_bradley_terry_two_players_is_the_log_odds_with_one_virtual_tie():
    r = bradley_terry(["random", "h"], [(1, 0, 75.0, 100.0)])
    assert r["random"] == 1000.0
    assert r["h"] - r["random"] == pytest.approx(400 * math.log10(75.5 / 25.5), abs=1e-6)
    even = bradley_terry(["a", "b", "c"], [(0, 1, 5, 10), (1, 2, 5, 10), (0, 2, 5, 10)], anchor=None)
    assert all(v == pytest.approx(1000.0) for v in even.values())


def test_bradley_terry_orders_a_transitive_set():
    r = bradley_terry(["a", "b", "c"], [(0, 1, 8, 10), (1, 2, 8, 10), (0, 2, 9, 10)], anchor="c")
    assert r["a"] > r["b"] > r["c"] == 1000.0


# --- playing --------------------------------------------------------------------------------------------

def test_same_seed_same_result_and_the_worker_count_does_not_matter():
    a = run_arena("partita", ["random", "heuristic", "random"], deals=6, seed=3, workers=1, chunk=2, bootstrap=200)
    b = run_arena("partita", ["random", "heuristic", "random"], deals=6, seed=3, workers=2, chunk=2, bootstrap=200)
    assert [p.as_dict() for p in a.pairs] == [p.as_dict() for p in b.pairs]
    assert all((x.margins == y.margins).all() for x, y in zip(a.pairs, b.pairs))
    assert a.ratings == b.ratings
    assert a.policies == ["random", "heuristic", "random#2"]
    c = run_arena("partita", ["random", "heuristic"], deals=6, seed=4, chunk=2, bootstrap=200)
    assert not (c.pairs[0].margins == a.pairs[0].margins).all()


@pytest.mark.parametrize("game", ["partita", "ottocento", "millone"])
def test_a_deterministic_policy_against_itself_scores_exactly_zero_on_every_duplicate_deal(game):
    res = run_arena(game, ["heuristic", "heuristic"], deals=3, seed=0, chunk=3, bootstrap=100)
    p = res.pairs[0]
    assert (p.margins == 0).all() and p.win_share == 0 and p.tie_share == 1
    assert (p.ci_low, p.ci_high) == (0.0, 0.0)


def test_pair_statistics_are_those_of_the_margins():
    res = run_arena("millone", ["heuristic", "random"], deals=4, seed=1, chunk=4, bootstrap=300)
    p = res.pairs[0]
    m = p.margins
    assert p.deals == 4 and p.mean_margin == pytest.approx(m.mean())
    assert p.win_share == (m > 0).mean() and p.tie_share == (m == 0).mean()
    assert p.ci_low <= p.mean_margin <= p.ci_high
    assert p.mean_margin > 0 and res.ratings["heuristic"] > res.ratings["random"] == 1000.0


def test_a_checkpoint_plays_in_the_arena_and_a_mismatched_one_is_refused(tmp_path):
    from tests.test_baselines import make_checkpoint

    ck = make_checkpoint(tmp_path / "tiny.pt", "partita")
    res = run_arena("partita", ["random", str(ck)], deals=2, seed=0, chunk=2, bootstrap=50)
    assert res.policies == ["random", f"{tmp_path.name}/tiny"]
    with pytest.raises(ValueError, match="trained for 'partita'"):
        run_arena("millone", ["random", str(ck)], deals=2)


def test_outputs_markdown_csv_json_png(tmp_path):
    res = run_arena("partita", ["random", "heuristic"], deals=4, seed=2, chunk=2, bootstrap=100)
    files = write_outputs(res, tmp_path, command="tarot-arena --game partita random heuristic")
    names = {f.name for f in files}
    assert {"arena.md", "pairs.csv", "ratings.csv", "arena.json"} <= names
    md = (tmp_path / "arena.md").read_text()
    assert "| random | heuristic | 4 |" in md and "tarot-arena --game partita" in md
    rows = list(csv.DictReader(open(tmp_path / "pairs.csv")))
    assert rows[0]["a"] == "random" and float(rows[0]["mean_margin"]) == pytest.approx(res.pairs[0].mean_margin)
    assert json.loads((tmp_path / "arena.json").read_text())["ratings"] == res.ratings
    pytest.importorskip("matplotlib")
    assert (tmp_path / "arena.png").stat().st_size > 1000


def test_cli_runs_and_rejects_bad_input(tmp_path, capsys):
    assert main(["--game", "millone", "random", "heuristic", "--deals", "2", "--bootstrap", "50",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "margin A−B / deal" in out and "Bradley–Terry" in out
    assert (tmp_path / "arena.md").exists()
    assert main(["--game", "millone", "random", "alphazero", "--deals", "2"]) == 2
    assert "neither a baseline" in capsys.readouterr().err
    assert main(["--game", "chess", "random", "heuristic"]) == 2


def test_benchmark_script_runs_as_a_command(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, str(root / "scripts" / "benchmark.py"), "--game", "partita", "random",
                        "heuristic", "--deals", "2", "--bootstrap", "50", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=root)
    assert r.returncode == 0, r.stderr
    assert "heuristic" in r.stdout and (tmp_path / "pairs.csv").exists()
