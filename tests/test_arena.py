"""The arena: duplicate deals, determinism, the worker split, CI and rating arithmetic, rating stability,
policy objects, outputs, CLI (help lists every player)."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import tarot_env
from agents.evaluation.arena import bootstrap_ci, main, margin_ratings, run_arena, tournament, write_outputs

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


def test_margin_ratings_two_players_are_the_mean_margin_and_its_standard_error():
    m = np.array([4.0, 6.0, 5.0, 9.0, 1.0])
    r, sd = margin_ratings(["random", "h"], [(1, 0, m)])
    assert r == {"random": 0.0, "h": pytest.approx(5.0)}
    assert sd["random"] == 0.0 and sd["h"] == pytest.approx(m.std(ddof=1) / math.sqrt(5))
    r, sd = margin_ratings(["a", "b"], [(0, 1, m)], anchor=None)  # no anchor: the average is 0
    assert r["a"] == pytest.approx(2.5) and r["b"] == pytest.approx(-2.5)
    assert sd["a"] == pytest.approx(m.std(ddof=1) / math.sqrt(5) / 2)


def test_margin_ratings_weight_each_pair_by_its_precision_and_recover_additive_strengths():
    rng = np.random.default_rng(0)
    true = {"random": 0.0, "h": 10.0, "p": 14.0}
    names = list(true)
    pairs = [(i, j, true[names[i]] - true[names[j]] + rng.normal(0, 8, 4000))
             for i in range(3) for j in range(i + 1, 3)]
    r, sd = margin_ratings(names, pairs)
    for n in names:
        assert abs(r[n] - true[n]) < 3 * sd[n] + 1e-12
    assert r["p"] > r["h"] > r["random"] == 0.0
    with pytest.raises(ValueError, match="do not connect"):
        margin_ratings(["a", "b", "c", "d"], [(0, 1, np.ones(3)), (2, 3, np.ones(3))])


@pytest.mark.parametrize("p_win", [0.6, 0.95, 1.0])
def test_ratings_from_60_and_1000_deals_of_the_same_pairing_agree_within_their_uncertainty(p_win):
    """More deals shrink the interval but do not move the rating: the Millone pairing random vs PPO
    (won on every deal) was rated 1857 after 60 deals and 2325 after 1,000 by the former win-odds fit."""
    def margins(n, seed):  # a duplicate-deal margin: won with probability p_win, by 1..40 points
        rng = np.random.default_rng(seed)
        size = rng.integers(1, 41, n).astype(float)
        return np.where(rng.random(n) < p_win, size, -size)

    few_r, few_sd = margin_ratings(["random", "x"], [(1, 0, margins(60, 1))])
    many_r, many_sd = margin_ratings(["random", "x"], [(1, 0, margins(1000, 2))])
    assert many_sd["x"] < few_sd["x"] / 3  # sqrt(1000 / 60) = 4.1
    assert abs(few_r["x"] - many_r["x"]) < 1.96 * math.hypot(few_sd["x"], many_sd["x"])
    # no systematic move: averaged over 300 repetitions the 60-deal rating equals the 1000-deal one
    mean60 = np.mean([margin_ratings(["random", "x"], [(1, 0, margins(60, 100 + s))])[0]["x"] for s in range(300)])
    assert mean60 == pytest.approx(many_r["x"], abs=4 * many_sd["x"])


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


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
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
    assert p.win_ci95[0] <= p.win_share <= p.win_ci95[1] and p.as_dict()["win_ci95"] == list(p.win_ci95)
    assert p.ci_low <= p.mean_margin <= p.ci_high
    assert p.mean_margin > 0 and res.ratings["heuristic"] > res.ratings["random"] == 0.0
    assert res.ratings["heuristic"] == pytest.approx(p.mean_margin) and res.anchor == "random"


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
    assert float(rows[0]["win_ci_high"]) == pytest.approx(res.pairs[0].win_ci95[1], abs=1e-6)
    assert json.loads((tmp_path / "arena.json").read_text())["ratings"] == res.ratings
    pytest.importorskip("matplotlib")
    assert (tmp_path / "arena.png").stat().st_size > 1000


def test_cli_runs_and_rejects_bad_input(tmp_path, capsys):
    assert main(["--game", "millone", "random", "heuristic", "--deals", "2", "--bootstrap", "50",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "margin A−B / deal" in out and "rating (margin / deal vs random)" in out
    assert (tmp_path / "arena.md").exists()
    assert main(["--game", "millone", "random", "alphazero", "--deals", "2"]) == 2
    err = capsys.readouterr().err
    assert "neither a baseline" in err and "sb3:PATH.zip" in err and "heuristic" in err
    with pytest.raises(SystemExit) as e:  # a usage error, found before any player is loaded
        main(["--game", "chess", "random", "heuristic"])
    assert e.value.code == 2 and "invalid choice: 'chess'" in capsys.readouterr().err


def test_cli_help_lists_every_player_kind_from_the_registry(capsys):
    from agents.players.baselines import BASELINES
    from agents.players.registry import player_specs

    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    specs = [spec for spec, _ in player_specs()]
    assert set(BASELINES) | {"ppo", "PATH.pt", "sb3:PATH.zip"} <= set(specs)
    for spec, what in player_specs():
        assert spec in out and what in out
    assert "--no-progress" in out


def test_arena_runs_as_a_command(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "agents.evaluation.arena", "--game", "partita", "random",
                        "heuristic", "--deals", "2", "--bootstrap", "50", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=root)
    assert r.returncode == 0, r.stderr
    assert "heuristic" in r.stdout and (tmp_path / "pairs.csv").exists()


# --- tournament(): objects as well as specs ---------------------------------------------------------------

def test_tournament_takes_policy_objects_callables_and_specs_and_names_them():
    from agents.players.baselines import HeuristicPolicy
    from agents.players.policy import RandomPolicy

    first_legal = lambda obs, mask: int(np.flatnonzero(mask)[0])  # noqa: E731
    res = tournament([HeuristicPolicy("partita"), "heuristic", first_legal, RandomPolicy(5)], "partita", 4,
                     seed=1, chunk=2, bootstrap=50)
    assert res.policies == ["HeuristicPolicy", "heuristic", "<lambda>", "RandomPolicy"]
    assert res.sources[1] == "heuristic" and res.sources[0] == "<object HeuristicPolicy>"
    same = res.pairs[0]  # the heuristic object against the heuristic by name: the same player
    assert (same.a, same.b) == ("HeuristicPolicy", "heuristic") and (same.margins == 0).all()
    assert res.anchor is None and sum(res.ratings.values()) == pytest.approx(0.0, abs=1e-9)
    named = tournament([HeuristicPolicy("partita"), RandomPolicy(0)], "partita", 2, names=["h", "random"],
                       bootstrap=50)
    assert named.policies == ["h", "random"] and named.ratings["random"] == 0.0 and named.ratings["h"] > 0
    with pytest.raises(TypeError, match="policy 1 is a int"):
        tournament(["random", 3], "partita", 2)
    with pytest.raises(ValueError, match="at least two"):
        tournament([RandomPolicy(0)], "partita", 2)


def test_a_stochastic_object_gives_the_same_result_whatever_the_workers_and_is_not_mutated():
    from agents.players.policy import RandomPolicy

    obj = RandomPolicy(7)
    state = obj.rng.bit_generator.state
    a = tournament([obj, "heuristic"], "millone", 6, seed=2, workers=1, chunk=2, bootstrap=50)
    b = tournament([obj, "heuristic"], "millone", 6, seed=2, workers=2, chunk=2, bootstrap=50)
    assert (a.pairs[0].margins == b.pairs[0].margins).all()
    assert obj.rng.bit_generator.state == state


def test_progress_bar_counts_the_deals_and_is_off_when_asked(capsys):
    pytest.importorskip("tqdm")
    tournament(["random", "heuristic"], "millone", 4, chunk=2, bootstrap=50, progress=True)
    err = capsys.readouterr().err
    assert "4/4" in err and "deal" in err
    tournament(["random", "heuristic"], "millone", 4, chunk=2, bootstrap=50, progress=False)
    assert capsys.readouterr().err == ""


def test_forked_workers_play_network_and_search_players_without_hanging(tmp_path):
    """Two forked workers, each with a network and a network-guided search (torch loaded by the parent
    first): they finish, with the result of one worker. Regression: a worker that used torch before
    setting its one thread hung on the thread pool inherited through fork. (A subprocess, so a hang is a
    timeout here, not a stuck test run.)"""
    import os
    import signal
    import subprocess
    import sys

    def arena(workers: int) -> list[str]:
        out = tmp_path / f"w{workers}"
        cmd = [sys.executable, "-c",
               "import sys; from agents.evaluation.arena import main; sys.exit(main(sys.argv[1:]))",
               "--game", "partita", "ppo+pimc:worlds=2,top_k=2", "ppo", "--deals", "2", "--chunk", "1",
               "--seed", "4", "--workers", str(workers), "--no-progress", "--out", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker processes too
            proc.communicate()
            pytest.fail(f"tarot-arena with {workers} workers did not finish in 180 s (a hung worker)")
        assert proc.returncode == 0, err.decode()
        return (out / "pairs.csv").read_text().splitlines()

    assert arena(2) == arena(1)


# --- the journal: an interrupted match goes on -----------------------------------------------------------

def _journal_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_resumed_match_plays_only_the_missing_tasks_and_gives_the_uninterrupted_result(tmp_path):
    kw = dict(deals=6, seed=5, chunk=2, bootstrap=100)
    whole = run_arena("partita", ["random", "heuristic", "random"], **kw)
    j = tmp_path / "journal.jsonl"
    again = tournament(["random", "heuristic", "random"], "partita", journal=j, **kw)
    assert [p.as_dict() for p in again.pairs] == [p.as_dict() for p in whole.pairs]
    head, *rows = _journal_lines(j)
    assert head["format"] == "tarocchini-arena-journal" and head["players"] == ["random", "heuristic", "random"]
    assert sorted((r["pair"], r["chunk"]) for r in rows) == [(p, c) for p in range(3) for c in range(3)]
    # interrupted after 4 of the 9 tasks, the 5th line cut short by the kill
    lines = j.read_text().splitlines(keepends=True)
    j.write_text("".join(lines[:5]) + lines[5][:17])
    resumed = tournament(["random", "heuristic", "random"], "partita", journal=j, resume=True, **kw)
    assert [p.as_dict() for p in resumed.pairs] == [p.as_dict() for p in whole.pairs]
    head, *rows = _journal_lines(j)  # the cut-short line was dropped, not glued to the next one
    assert sorted((r["pair"], r["chunk"]) for r in rows) == [(p, c) for p in range(3) for c in range(3)]
    assert all((x.margins == y.margins).all() for x, y in zip(resumed.pairs, whole.pairs))
    # the tasks kept are taken from the journal, not played again: mark one (its check recomputed, as a hand
    # edit cannot be taken) and find the mark in the result
    from agents.evaluation.arena import chain, header_check

    lines = j.read_text().splitlines()
    first = json.loads(lines[1])
    first["margins"] = [1000.0] * len(first["margins"])
    first["check"] = chain(header_check(lines[0]), first)
    j.write_text("\n".join([lines[0], json.dumps(first)]) + "\n")
    marked = tournament(["random", "heuristic", "random"], "partita", journal=j, resume=True, **kw)
    chunk = marked.pairs[first["pair"]].margins[2 * first["chunk"]:2 * first["chunk"] + 2]
    assert (chunk == 1000.0).all()
    assert len(j.read_text().splitlines()) == 10  # the header and each task once


def test_a_journal_of_another_match_or_a_bad_line_is_refused_and_left_as_it_was(tmp_path):
    j = tmp_path / "journal.jsonl"
    tournament(["random", "heuristic"], "millone", 4, seed=1, chunk=2, bootstrap=50, journal=j)
    before = j.read_text()
    for kw, what in ((dict(seed=2), "seed: journal 1, this match 2"), (dict(chunk=1), "chunk"),
                     (dict(deals=6), "deals")):
        args = dict(deals=4, seed=1, chunk=2) | kw
        with pytest.raises(ValueError, match=what):
            tournament(["random", "heuristic"], "millone", bootstrap=50, journal=j, resume=True, **args)
        assert j.read_text() == before
    with pytest.raises(ValueError, match="players"):
        tournament(["heuristic", "random"], "millone", 4, seed=1, chunk=2, journal=j, resume=True)
    lines = before.splitlines()
    for bad in ({"pair": 0, "chunk": 7, "margins": [0, 0]}, {"pair": 0, "chunk": 0, "margins": [0]},
                {"pair": 0, "chunk": 0, "margins": [0, "inf"]}, {"pair": True, "chunk": 0, "margins": [0, 0]},
                {"pair": 0, "chunk": 0, "margins": [0, 0], "x": 1}):
        j.write_text("\n".join([lines[0], json.dumps(bad), lines[1]]) + "\n")
        with pytest.raises(ValueError, match="line 2: not a task of this match"):
            tournament(["random", "heuristic"], "millone", 4, seed=1, chunk=2, journal=j, resume=True)
    j.write_text("\n".join([lines[0], "{oops", lines[1]]) + "\n")  # cut short, but not the last line
    with pytest.raises(ValueError, match="line 2: not JSON"):
        tournament(["random", "heuristic"], "millone", 4, seed=1, chunk=2, journal=j, resume=True)
    j.write_text("pair,chunk\n")
    with pytest.raises(ValueError, match="not an arena journal"):
        tournament(["random", "heuristic"], "millone", 4, seed=1, chunk=2, journal=j, resume=True)
    assert j.read_text() == "pair,chunk\n"
    with pytest.raises(ValueError, match="resume needs the journal"):
        tournament(["random", "heuristic"], "millone", 4, resume=True)
    with pytest.raises(ValueError, match="objects"):
        tournament([lambda o, m: int(np.flatnonzero(m)[0]), "random"], "millone", 2, journal=j)


def test_a_journal_names_the_weights_it_played_and_refuses_other_weights(tmp_path):
    from tests.test_baselines import make_checkpoint

    ck = make_checkpoint(tmp_path / "tiny.pt", "partita")
    j = tmp_path / "journal.jsonl"
    tournament(["random", str(ck)], "partita", 2, seed=0, chunk=1, bootstrap=50, journal=j)
    head = _journal_lines(j)[0]
    assert len(head["files"][str(ck)][str(ck)]) == 64
    make_checkpoint(ck, "partita", step=1)  # same name, other weights
    with pytest.raises(ValueError, match="files"):
        tournament(["random", str(ck)], "partita", 2, seed=0, chunk=1, journal=j, resume=True)


def test_cli_writes_the_journal_and_resume_finishes_an_interrupted_run(tmp_path, capsys):
    args = ["--game", "millone", "random", "heuristic", "--deals", "4", "--chunk", "1", "--bootstrap", "50",
            "--out", str(tmp_path)]
    assert main(args) == 0
    whole = json.loads((tmp_path / "arena.json").read_text())
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    assert len(lines) == 5
    (tmp_path / "journal.jsonl").write_text("\n".join(lines[:3]) + "\n")
    (tmp_path / "arena.json").unlink()
    assert main(args + ["--resume"]) == 0
    assert json.loads((tmp_path / "arena.json").read_text()) == whole
    other = ["--game", "millone", "random", "heuristic", "--deals", "5", "--chunk", "1", "--out", str(tmp_path)]
    assert main(other + ["--resume"]) == 2
    assert "another match" in capsys.readouterr().err
    # another match's results, finished or not, are replaced only with --restart
    assert main(other) == 2
    assert "holds the results of another match" in capsys.readouterr().err
    assert main(other + ["--restart"]) == 0
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    (tmp_path / "journal.jsonl").write_text("\n".join(lines[:3]) + "\n")
    before = (tmp_path / "journal.jsonl").read_text()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "unfinished match (2 of its 5 chunks finished)" in err and "--resume" in err and "--restart" in err
    assert (tmp_path / "journal.jsonl").read_text() == before
    assert main(args + ["--resume", "--restart"]) == 2
    assert "one of them" in capsys.readouterr().err
    # a line cut short by a kill is not a finished chunk: 4 of 5 with a cut 5th line is still unfinished
    (tmp_path / "journal.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:9])
    assert main(other) == 2
    assert "unfinished match (4 of its 5 chunks finished)" in capsys.readouterr().err
    assert main(args + ["--restart"]) == 0
    assert json.loads((tmp_path / "arena.json").read_text()) == whole


# --- nothing lost or silently changed (issue #35) -----------------------------------------------------------
def test_an_edited_or_reordered_journal_is_refused_on_resume_and_left_as_it_was(tmp_path):
    j = tmp_path / "journal.jsonl"
    kw = dict(deals=6, seed=1, chunk=2, bootstrap=50)
    tournament(["random", "heuristic"], "millone", journal=j, **kw)
    lines = j.read_text().splitlines()
    edited = json.loads(lines[2])
    edited["margins"][0] += 250.0  # a margin changed by hand, the line otherwise well formed
    reordered = [lines[0], lines[2], lines[1], *lines[3:]]
    dropped = [lines[0], *lines[2:]]
    for text in ("\n".join([*lines[:2], json.dumps(edited), *lines[3:]]), "\n".join(reordered), "\n".join(dropped)):
        j.write_text(text + "\n")
        with pytest.raises(ValueError, match=r"line [23]: its check does not match .* --restart"):
            tournament(["random", "heuristic"], "millone", journal=j, resume=True, **kw)
        assert j.read_text() == text + "\n"


def test_another_matchs_results_are_not_replaced_without_restart(tmp_path, capsys):
    first = ["--game", "millone", "random", "heuristic", "--deals", "2", "--bootstrap", "50", "--out", str(tmp_path)]
    other = ["--game", "millone", "random", "heuristic", "--deals", "2", "--seed", "9", "--bootstrap", "50",
             "--out", str(tmp_path)]
    assert main(first) == 0
    kept = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "holds the results of another match (seed: journal 0, this match 9)" in err and "--restart" in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == kept
    (tmp_path / "journal.jsonl").unlink()  # results that no journal names are not replaced either
    assert main(other) == 2
    assert "without a journal to tell which match they are" in capsys.readouterr().err
    assert main(other + ["--restart"]) == 0
    assert json.loads((tmp_path / "arena.json").read_text())["seed"] == 9
    assert main(other) == 0  # the same match again: its own results, played again to the same figures


def test_the_arena_needs_as_many_deals_as_the_evaluation(tmp_path):
    from agents.names import MIN_DEALS

    with pytest.raises(ValueError, match=f"deals must be at least {MIN_DEALS} \\(got 1\\)"):
        tournament(["random", "heuristic"], "millone", 1)
    from agents.evaluation.evaluate import duplicate_eval
    from agents.players.policy import RandomPolicy
    from agents.spec import make_spec

    with pytest.raises(ValueError, match=f"deals must be at least {MIN_DEALS} \\(got 1\\)"):
        duplicate_eval(make_spec("millone"), RandomPolicy(0), None, 1)
