"""The command-line entry points run as users run them (``python -m ...`` in a subprocess): the output
they print and their exit status; a bad argument gives one line on stderr and status 2, never a
traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tarot_env

ROOT = Path(__file__).resolve().parent.parent
GAMES = sorted(tarot_env.ENV_IDS)


def run(*args: str) -> subprocess.CompletedProcess:
    """``python -m <args>`` from the repository root (so this checkout's packages are imported)."""
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)


def one_error_line(r: subprocess.CompletedProcess, prefix: str) -> str:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), r.stderr
    return lines[0]


# --- tarot-demo ------------------------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_demo_plays_a_whole_game_of_every_game_with_and_without_every_move(game):
    per_deal = run("tarot_env.demo", "--game", game, "--seed", "3")
    every = run("tarot_env.demo", "--game", game, "--seed", "3", "--every-move")
    for r in (per_deal, every):
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert game.capitalize() in r.stdout  # the rendered table
        assert "--- last deal scored: scores [" in r.stdout
    final = per_deal.stdout.strip().splitlines()[-1]
    sides = ("team 0 = player_0, team 1 = player_1" if game == "millone"
             else "team 0 = player_0 + player_2, team 1 = player_1 + player_3")
    assert final.startswith(f"final scores ({sides}): [") and "winner: " in final
    # the same seeded game either way; --every-move only draws the table before every decision
    assert every.stdout.strip().splitlines()[-1] == final
    assert [x for x in every.stdout.splitlines() if "scored: " in x] == \
        [x for x in per_deal.stdout.splitlines() if "scored: " in x]
    assert len(every.stdout) > 10 * len(per_deal.stdout)


def test_demo_is_reproducible_and_refuses_an_unknown_game():
    assert run("tarot_env.demo", "--game", "millone", "--seed", "5").stdout == \
        run("tarot_env.demo", "--game", "millone", "--seed", "5").stdout
    r = run("tarot_env.demo", "--game", "scopa")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "invalid choice: 'scopa'" in r.stderr


# --- python -m agents.evaluation.evaluate ---------------------------------------------------------------------
def test_evaluate_the_shipped_policy_by_name():
    r = run("agents.evaluation.evaluate", "ppo", "--deals", "4")
    assert r.returncode == 0, r.stderr
    head, result = r.stdout.strip().splitlines()
    assert head == "partita: ppo against random"  # partita by default when the players are names
    assert result.startswith("4 duplicate deals: margin ") and "(95% CI) points/deal" in result


@pytest.mark.parametrize("game", GAMES)
def test_evaluate_a_checkpoint_against_heuristic_takes_the_checkpoint_game(game):
    r = run("agents.evaluation.evaluate", f"agents/pretrained/{game}.pt", "--against", "heuristic", "--deals", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"{game}: pretrained/{game} against heuristic"


def test_evaluate_names_on_another_game():
    r = run("agents.evaluation.evaluate", "heuristic", "--game", "millone", "--against", "ppo", "--deals", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "millone: heuristic against ppo"


@pytest.mark.parametrize("args,fragment", [
    (["no/such/file.pt"], ("'no/such/file.pt' is not a player: neither a baseline nor an existing file; "
                           "players are random, heuristic, ppo, pimc[:worlds=N,rollout=R,time=S], "
                           "ppo+pimc[:worlds=N,top_k=K], PATH.pt, sb3:PATH.zip")),
    (["ppo", "--against", "heuristc"], "'heuristc' is not a player: neither a baseline nor an existing file"),
    (["agents/pretrained/millone.pt", "--game", "partita"],
     "was trained for 'millone' (tarocchini/millone-v2), not for 'partita'; pick a partita checkpoint"),
    (["pyproject.toml"], "corrupt checkpoint 'pyproject.toml': it is not a checkpoint file (a checkpoint is a "
                         "PyTorch zip archive"),
], ids=["missing", "typo", "wrong-game", "not-a-checkpoint"])
def test_evaluate_errors_are_one_line_with_status_2(args, fragment):
    line = one_error_line(run("agents.evaluation.evaluate", *args), "evaluate: error: ")
    assert fragment in line


def test_evaluate_argument_errors_list_the_choices():
    r = run("agents.evaluation.evaluate", "ppo", "--game", "scopa")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "invalid choice: 'scopa' (choose from 'millone', 'ottocento', 'partita')" in r.stderr
    r = run("agents.evaluation.evaluate", "--help")
    assert r.returncode == 0 and "random, heuristic, ppo" in " ".join(r.stdout.split())
