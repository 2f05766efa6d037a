"""A search's uniform rollouts all in compiled code (``<Game>Rows.random_playouts``: issue #33): each row's
moves, recorded by the kernel, replay legally through the one-row game to the end of the same deal, which
scores the value the kernel gave (PAR-6, D.5, C.9; a thrown-in Ottocento hand, OTT-3.2, and a game won at
the declarations, OTT-6.1, end it at once; a Millone claim at the next deal, MIL-3, is not played); every
move is a uniform draw over the legal ones."""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from test_sampler import chi_square_p
from test_vector_load_games import _phases, positions

CONFIGS = [
    ("partita", {"partita_signals": "bolognese3"}),
    ("millone", {}),
    ("ottocento", {}),
    ("ottocento", {"a_monte": "ask_all", "ott_signal_players": "all"}),
    ("ottocento", {"ott_signal_timing": "after_top_card_played", "ott_signal_players": "eldest_only"}),
]
LOG = 400  # more than any deal's actions


def _kind(entry: dict) -> str:
    return ("thrown_in" if entry.get("thrown_in") else "won_at_declarations" if entry.get("won_at_declarations")
            else "played_out")


def _replayed(g, moves: np.ndarray, team: int) -> tuple[float, str]:
    """``moves`` (up to the first -1) applied to a copy of ``g`` through its checked ``apply``: the deal under
    way must end at the last move and not before; its record's score difference for ``team``, its kind."""
    c, h0 = g.clone(), len(g.history)
    moves = moves[moves >= 0]
    for i, a in enumerate(moves.tolist()):
        assert len(c.history) == h0, "the deal ended before the last recorded move"
        assert c.legal_mask()[a], (i, a)
        c.apply(a)
    assert len(c.history) > h0, "the deal did not end at the last recorded move"
    sc = c.history[h0]["scores"]
    return float(sc[team] - sc[1 - team]), _kind(c.history[h0])


def _check(g, n: int, seed: int, kinds: dict) -> int:
    """``n`` copies of ``g``'s row, each a random first action then the kernel's playout: every row replays
    to its value. Returns the number of distinct values."""
    rows = g.row.tiled(n)
    legal = g.legal_actions()
    rng = np.random.default_rng(seed)
    first = rng.choice(legal, size=n)
    teams = np.full(n, g.team_of[g.current])
    log = np.zeros((n, LOG), dtype=np.int64)
    values = rows.random_playouts(first, teams, g.config, seed, log=log)
    assert (log[:, 0] == first).all()
    for b in range(n):
        v, kind = _replayed(g, log[b], int(teams[b]))
        assert v == values[b], (b, v, values[b])
        kinds[kind] = kinds.get(kind, 0) + 1
    return len(set(values.tolist()))


@pytest.mark.parametrize("game,options", CONFIGS)
def test_PAR_6_D_5_C_9_random_playouts_replay_through_the_one_row_game_to_the_value(game, options):
    """At seeded positions of every phase, each row's recorded moves are legal in the one-row game, end
    the deal exactly there, and its record scores the kernel's value."""
    cfg = tarot_env.make_vec(game, 1, **options).config
    kinds, distinct = {}, 0
    for i, g in enumerate(positions(game, cfg, 2 * len(_phases(game, cfg)), seed=21, max_moves=120)):
        distinct += _check(g, 12, i, kinds)
    assert distinct > 20  # real deal scores, not a constant
    assert kinds.get("played_out", 0) > 0


def test_OTT_3_2_a_thrown_in_hand_is_worth_0_and_OTT_6_1_a_game_won_at_the_declarations_ends_the_hand():
    """Ottocento's hands that end before the play: the dealer's "a monte" after the other three (OTT-3.2)
    and declarations that reach the target (OTT-6.1), replayed as above."""
    from agents.play.human import new_game
    from tarot_env.rules.ottocento import A_MONTE

    g = new_game("ottocento", 4, {"a_monte": "ask_all"})
    for _ in range(3):
        g.apply(A_MONTE)
    kinds: dict = {}
    rows = g.row.tiled(8)
    values = rows.random_playouts(np.full(8, A_MONTE), np.zeros(8, dtype=np.int64), g.config, 0)
    assert (values == 0).all()
    _check(g, 8, 0, kinds)
    assert kinds["thrown_in"] > 0 and kinds["played_out"] > 0
    rng, won = np.random.default_rng(1), {}
    for seed in range(6):  # the declarations with both teams near the target
        g = new_game("ottocento", seed)
        while g.phase.name != "DECLARE":
            g.apply(g.legal_actions()[rng.integers(len(g.legal_actions()))])
        g.row.scores[0] = 790
        _check(g, 8, seed, won)
    assert won.get("won_at_declarations", 0) > 0


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
def test_random_playouts_draw_every_legal_move_uniformly(game):
    """2,000 copies of a position with several legal moves after the first action: the second move drawn
    takes every legal one, in proportions a chi-square test finds uniform (p > 1e-4); the same seed
    draws the same moves."""
    from agents.play.human import new_game

    g, rng = new_game(game, 3), np.random.default_rng(0)
    while True:
        legal = g.legal_actions()
        if g.phase.name == "PLAY" and len(legal) >= 2:
            after = g.clone()
            after.apply(legal[0])
            if len(after.legal_actions()) >= 4 and not after.history:
                break
        g.apply(legal[rng.integers(len(legal))])
    n = 2000
    logs = []
    for _ in range(2):
        log = np.zeros((n, 2), dtype=np.int64)
        g.row.tiled(n).random_playouts(np.full(n, legal[0]), np.zeros(n, dtype=np.int64), g.config, 7, log=log)
        logs.append(log)
    assert np.array_equal(logs[0], logs[1])
    moves = logs[0][:, 1]
    expected = after.legal_actions()
    assert set(moves.tolist()) == set(expected)
    counts = np.array([(moves == a).sum() for a in expected])
    assert chi_square_p(counts.astype(float)) > 1e-4, counts


@pytest.mark.parametrize("game", ["millone", "ottocento"])
def test_random_playouts_bad_requests_raise_and_change_nothing(game):
    from agents.play.human import new_game

    g = new_game(game, 1)
    rows = g.row.tiled(3)
    before = {k: v.copy() for k, v in rows.arrays().items()}
    legal = g.legal_actions()
    with pytest.raises(ValueError, match="one first action and team per row"):
        rows.random_playouts(np.full(2, legal[0]), np.zeros(2, dtype=np.int64), g.config, 0)
    other = new_game(game, 1, {"max_hands": 7}).config
    with pytest.raises(ValueError, match="these rows play"):
        rows.random_playouts(np.full(3, legal[0]), np.zeros(3, dtype=np.int64), other, 0)
    assert all(np.array_equal(v, before[k]) for k, v in rows.arrays().items())


@pytest.mark.parametrize("game,options", [c for c in CONFIGS if c[0] != "partita"])
def test_millone_and_ottocento_playouts_value_every_world_as_the_python_stepped_engine(game, options):
    """Millone's and Ottocento's compiled loops step every row once a step and draw in row order, one draw
    per row with a choice, as the search stepping the engine from Python does (``engine="stepped"``,
    ``pimc._uniform_moves``): with the same seed the values are the same, world by world and action by
    action, at positions of every phase."""
    from agents.players.pimc import PIMCPolicy

    cfg = tarot_env.make_vec(game, 1, **options).config
    compared = set()
    for g in positions(game, cfg, len(_phases(game, cfg)), seed=5, max_moves=120):
        while len(g.legal_actions()) < 2:
            g.apply(g.legal_actions()[0])
        fast = PIMCPolicy(game, worlds=6, rollout="random", seed=3)
        stepped = PIMCPolicy(game, worlds=6, rollout="random", seed=3, engine="stepped")
        fast.evaluate(g)
        stepped.evaluate(g)
        assert np.array_equal(fast.last["per_world"], stepped.last["per_world"]), g.phase.name
        compared.update(fast.last["per_world"].ravel().tolist())
    assert len(compared) > 10


def test_ottocento_kernels_that_inline_the_step_count_no_references():
    """Issue #33: Ottocento's step (``_act``, ``_legal_row``) is inlined into the loops over rows; compiled with
    numba's reference counting, every state array read there costs two atomic count updates, and a random
    playout took five times as long (about 1 µs a row and move instead of 0.2). Both loops are compiled
    without it (their scratch arrays come from Python)."""
    from tarot_env.rules import ottocento

    for kernel in (ottocento._step_kernel, ottocento._random_playouts):
        assert kernel.targetoptions.get("_nrt") is False, kernel.__name__
