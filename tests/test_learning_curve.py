"""scripts/learning_curve.py (issue #34, item 5): every network of an expert-iteration run against a fixed
reference set on the same duplicate deals, the compute spent before it, a network met again not replayed,
the results kept by checksum; a directory that is not a run is refused."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agents.evaluation.evaluate import duplicate_eval
from agents.players.policy import load_network_policy
from agents.players.registry import load_policy
from agents.spec import make_spec
from agents.training import iterate as it

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from learning_curve import curve_table, learning_curve, main, plot_curve  # noqa: E402

TINY = ["game=millone", "deals=2", "opponents=[random]", "worlds=1", "rollout=random", "steps=2",
        "match_deals=2", "threads=1", "seed=5", "iterations=2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("curve") / "run"
    it.iterate(it.load_iter_config(None, [*TINY, f"run_dir={run}"]), log=lambda s: None)
    return run


def test_each_network_is_played_against_each_reference_on_the_same_deals(run):
    logged = []
    curve = learning_curve(run, ["random", "heuristic"], deals=4, seed=3, log=logged.append)
    assert [p["net"] for p in curve["points"]] == [0, 1, 2]
    spec = make_spec("millone")
    for p in curve["points"]:
        net = load_network_policy(run / f"net_{p['net']}.pt", "millone")
        want = duplicate_eval(spec, net, load_policy("random", "millone", seed=3), deals=4, seed=3).as_dict()
        assert p["results"]["random"] == want
        assert p["results"]["random"]["win_ci95"][0] <= p["results"]["random"]["win_share"]
    distinct = {p["checksum"] for p in curve["points"]}
    assert len(logged) == 2 * len(distinct)  # a network kept (not promoted) is not played again
    for k, p in enumerate(curve["points"][1:], start=1):
        rec = json.loads((run / f"step_{k - 1}/match.json").read_text())
        assert p["promoted"] == rec["match"]["promoted"]
        if not p["promoted"]:
            assert p["checksum"] == curve["points"][k - 1]["checksum"]
    spent = [sum(it_rec["label_cpu_seconds"] * it_rec["processes"] + it_rec["fit_seconds"] + it_rec["match"]["seconds"]
                 for it_rec in [json.loads((run / f"step_{j}/match.json").read_text()) for j in range(k)]) / 3600
             for k in range(3)]
    assert [p["core_hours"] for p in curve["points"]] == pytest.approx(spent)


def test_results_are_kept_so_a_second_call_plays_only_what_is_new(run):
    learning_curve(run, ["random"], deals=4, seed=3, log=lambda s: None)
    logged = []
    again = learning_curve(run, ["random"], deals=4, seed=3, log=logged.append)
    assert logged == []
    cache = json.loads((run / "curve.json").read_text())
    assert all(f"{p['checksum']}|random|4|3" in cache["results"] for p in again["points"])
    other = []
    learning_curve(run, ["random"], deals=4, seed=4, log=other.append)  # another seed: other deals, played
    assert other


def test_the_table_the_plot_and_the_command_line(run, tmp_path, capsys):
    curve = learning_curve(run, ["random"], deals=4, seed=3, log=lambda s: None)
    table = curve_table(curve)
    assert table.count("\n| `net_") == 3 and "| `net_0` | start |" in table
    plot_curve(curve, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "c.json"
    assert main([str(run), "--against", "random", "--deals", "4", "--seed", "3", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["points"] == json.loads(json.dumps(curve["points"]))
    assert main([str(tmp_path)]) == 2
    assert "holds no run.json: not a run directory of tarot-iterate" in capsys.readouterr().err
