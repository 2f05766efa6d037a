"""The games are the games recorded before the one-engine rewrite (issue #33), bit for bit.

``tests/golden/<game>.npz`` holds seeded AEC games, batched runs and the shipped players' moves, recorded
from the engine as it stood on main on 2026-12-03 (``tests/golden_trajectories.py`` says what each
record holds). Every game of the table, every option set of the contract and differential tests:

* every AEC step: the acting agent, its observation, mask, reward, end and info, every agent's
  observation, ``state()`` and the action (RULES.md H.1-H.5 as the env encodes them, every rule of
  parts C, D, E through the masks and the scores);
* every batched step: seats, observations, masks, rewards, ends, info arrays, final infos, ``state()``;
* the shipped networks' and the heuristic's moves, every seat, in seeded games.

A failure names the option set, the game (seed) and the first step that differs and which part of it.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import golden_trajectories as gt
import tarot_env

CASES = [(game, i) for game in sorted(gt.CASES) for i in range(len(gt.CASES[game]))]
IDS = [f"{game}-{gt.case_name(gt.CASES[game][i])}" for game, i in CASES]
_DATA: dict[str, dict[str, np.ndarray]] = {}


def data(game: str) -> dict[str, np.ndarray]:
    if game not in _DATA:
        _DATA[game] = gt.load(game)
    return _DATA[game]


def test_the_records_are_of_every_game_and_of_the_option_sets_named_here():
    assert sorted(gt.CASES) == sorted(tarot_env.GAMES)
    for game in gt.CASES:
        d = data(game)
        assert [json.loads(c) for c in d["cases"]] == gt.CASES[game]
        for i, options in enumerate(gt.CASES[game]):
            lengths = d[f"aec{i}_lengths"]
            assert len(lengths) == gt.aec_game_count(options) and lengths.min() >= 4
            assert len(d[f"aec{i}_steps"]) == lengths.sum()
            assert d[f"vec{i}"].shape == (gt.VEC_STEPS + 1, len(gt.VEC_PARTS))


@pytest.mark.parametrize("game,case", CASES, ids=IDS)
def test_aec_games_are_the_recorded_ones(game, case):
    d = data(game)
    options = gt.CASES[game][case]
    lengths = d[f"aec{case}_lengths"]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    for seed in range(len(lengths)):
        steps, parts = gt.aec_game(game, options, seed)
        want_steps = d[f"aec{case}_steps"][starts[seed]:starts[seed + 1]]
        want_parts = d[f"aec{case}_parts"][seed]
        if len(steps) == len(want_steps) and np.array_equal(steps, want_steps):
            assert np.array_equal(parts, want_parts)
            continue
        n = min(len(steps), len(want_steps))
        first = int(np.flatnonzero(steps[:n] != want_steps[:n])[0]) if (steps[:n] != want_steps[:n]).any() else n
        differ = [name for name, a, b in zip(gt.AEC_PARTS, parts, want_parts) if a != b]
        pytest.fail(f"{game} {gt.case_name(options)} seed {seed}: the game differs from step {first} on "
                    f"({len(steps)} steps, recorded {len(want_steps)}); parts that differ: {differ}")


@pytest.mark.parametrize("game,case", CASES, ids=IDS)
def test_batched_runs_are_the_recorded_ones(game, case):
    want = data(game)[f"vec{case}"]
    got = gt.vec_trace(game, gt.CASES[game][case], seed=100 + case)
    if not np.array_equal(got, want):
        t = int(np.flatnonzero((got != want).any(1))[0])
        differ = [name for name, a, b in zip(gt.VEC_PARTS, got[t], want[t]) if a != b]
        pytest.fail(f"{game} {gt.case_name(gt.CASES[game][case])}: the batched run differs from step {t} on, "
                    f"in {differ}")


@pytest.mark.parametrize("player", gt.PLAYERS)
@pytest.mark.parametrize("game", sorted(gt.CASES))
def test_the_shipped_network_and_the_heuristic_play_the_recorded_moves(game, player):
    d = data(game)
    for seed in range(gt.POLICY_GAMES):
        moves, want = gt.player_moves(game, player, seed), d[f"moves_{player}_{seed}"]
        n = min(len(moves), len(want))
        assert np.array_equal(moves, want), (
            f"{player} in {game} seed {seed}: {len(moves)} moves, recorded {len(want)}; first difference at move "
            f"{int(np.flatnonzero(moves[:n] != want[:n])[0]) if (moves[:n] != want[:n]).any() else n}")


def test_a_changed_game_is_caught_at_its_first_different_step():
    """The check can fail: a game whose first observation is changed by one float differs at step 0."""
    steps, _ = gt.aec_game("partita", {}, 0)
    d = data("partita")
    want = d["aec0_steps"][:len(steps)]
    assert np.array_equal(steps, want)
    other, _ = gt.aec_game("partita", {"first_dealer": 3}, 0)
    assert other[0] != want[0] or other[1] != want[1]
    assert gt.digest(np.float32([0.0, 1.0])) != gt.digest(np.float32([0.0, np.nextafter(1, 2, dtype=np.float32)]))
