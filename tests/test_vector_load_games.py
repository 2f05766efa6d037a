"""``VecEnv.load_games``: a batched engine's rows started from rules objects play exactly as those objects.

For each game and several option sets, rules objects are brought to seeded random mid-deal positions
of every phase (Partita: discard, play, a pending signal; Millone: both discards, play, a card on the
table; Ottocento: a monte, discard, declarations, play, a pending signal), loaded into the rows of a
batched engine and into registered AEC environments (``env.game`` set to a clone); then both are
stepped with the same random legal actions across the end of the deal into the next ones, comparing
at every step the acting seat, its observation and mask, the rewards, the ends of episodes and their
final infos (``aec_helpers.step_and_compare``) and ``state()``; and every few steps everything the
engines' own differential tests compare (every seat's observation, the state block; Ottocento: the
whole rules object rebuilt from the arrays, ``_game_of``). Then the round trip, the bad input, and
the rows not named.
"""
from __future__ import annotations

import numpy as np
import pytest

import test_vector_millone
import test_vector_ottocento
import test_vector_partita
from aec_helpers import random_actions, row_arrays, same_arrays, step_and_compare
from tarot_env.envs.millone import raw_env as millone_env
from tarot_env.envs.ottocento import raw_env as ottocento_env
from tarot_env.envs.partita import raw_env as partita_env
from tarot_env.rules.millone import MilloneGame
from tarot_env.rules.ottocento import OttocentoGame
from tarot_env.rules.partita import PartitaGame
from tarot_env.sampler import Determinizer
from tarot_env.vector import make_vec

ENV = {"partita": partita_env, "millone": millone_env, "ottocento": ottocento_env}
COMPARE = {"partita": test_vector_partita.compare_rows, "millone": test_vector_millone.compare_rows,
           "ottocento": test_vector_ottocento.compare_rows}
SIGNAL = "SIGNAL"  # a position in PLAY with a signal chosen for the next card (PAR-7.1, OTT-8.1)
TRICK = "TRICK"  # a position in PLAY with cards on the table
MATTO = "MATTO"  # a position in PLAY after the Matto was played (Millone: its payment owed, MIL-4.3)


def _phases(game: str, cfg) -> list[str]:
    """The kinds of position to load for ``game`` under ``cfg``."""
    if game == "partita":
        return ["DISCARD", "PLAY", TRICK, MATTO] + ([SIGNAL] if cfg.partita_signals == "bolognese3" else [])
    if game == "millone":
        return ["DISCARD", "SECOND_DISCARD", "PLAY", TRICK, MATTO]
    return (["A_MONTE"] if cfg.a_monte != "off" else []) + ["DISCARD", "DECLARE", "PLAY", TRICK, SIGNAL, MATTO]


def _reached(g, kind: str) -> bool:
    if kind == SIGNAL:
        return g.phase.name == "PLAY" and g.pending_signal >= 0
    if kind == TRICK:
        return g.phase.name == "PLAY" and len(g.trick) > 0
    if kind == MATTO:
        return g.phase.name == "PLAY" and g.excuse_owner >= 0 and getattr(g, "exchange_owed", 0) >= 0
    return g.phase.name == kind


def positions(game: str, cfg, n: int, seed: int, max_moves: int = 150) -> list:
    """``n`` rules objects of ``game`` at seeded random positions: row ``i`` plays a random number of
    random legal moves (into later deals and games too), then on until it is at a position of kind
    ``_phases()[i % k]`` (a signal chosen where that is the kind, the Matto played early where that is;
    Ottocento's a monte answered "play on" mostly, so that hands get played)."""
    Game = {"partita": PartitaGame, "millone": MilloneGame, "ottocento": OttocentoGame}[game]
    kinds = _phases(game, cfg)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        g = Game(cfg, seed=seed * 1000 + i)
        kind = kinds[i % len(kinds)]
        moves = int(rng.integers(0, max_moves))
        for t in range(moves + 2000):
            if t >= moves and _reached(g, kind):
                break
            legal = g.legal_actions()
            sig = [a for a in legal if g.pack.size <= a < g.pack.size + 3]
            if kind == SIGNAL and t >= moves and sig:
                a = sig[int(rng.integers(len(sig)))]
            elif kind == MATTO and g.pack.excuse in legal and rng.random() < 0.8:
                a = g.pack.excuse  # the Matto, early: Millone's payment is then often owed
            elif g.phase.name == "A_MONTE":
                a = legal[int(rng.random() < 0.8)]  # [A_MONTE, PLAY_ON]: mostly play on
            else:
                a = legal[int(rng.integers(len(legal)))]
            g.apply(a)
            if g.game_over:
                g = g.next_game()
        else:  # pragma: no cover - guard
            raise AssertionError(f"no {kind} position reached")
        out.append(g)
    return out


def aec_envs(game: str, games: list, opts: dict) -> list:
    """One registered AEC env per game, playing a clone of it (as if it had reached that position)."""
    envs = []
    for g in games:
        e = ENV[game](**opts)
        e.reset(seed=0)
        e.game = g.clone()
        e._deals_seen = len(e.game.history)
        e._after_move()
        envs.append(e)
    return envs


def drive_loaded(game: str, n: int, steps: int, seed: int, full_every: int = 10, repeat: int = 1, **opts):
    """Load ``n`` positions into an engine and AEC envs, step both with the same random actions and
    compare every step; returns (the loaded games, deals ended per row). ``repeat``: each object fills
    that many rows in a row (as a search loads a world once per action), which then go their own ways."""
    venv = make_vec(game, n, seed=99, **opts)
    games = [g for g in positions(game, venv.config, n // repeat, seed) for _ in range(repeat)]
    envs = aec_envs(game, games, opts)
    before = [g.to_dict() for g in games]
    out = venv.load_games(games)
    assert [g.to_dict() for g in games] == before, "load_games changed the rules objects"
    compare = COMPARE[game]
    compare(venv, out, envs, state=True)
    rng = np.random.default_rng(seed + 1)
    ended = np.zeros(n, dtype=np.int64)
    for t in range(steps):
        actions = random_actions(out.mask, rng)
        seen = [(e.game, len(e.game.history)) for e in envs]
        out = venv.step(actions)
        step_and_compare(venv, out, envs, actions, t)
        for b, e in enumerate(envs):
            g, h = seen[b]
            ended[b] += g is not e.game or h != len(e.game.history)
            if out.done[b] and "final_deal_scores" in out.info:  # the deal played out (not a claim after it)
                deal = next(r for r in g.history[h:] if "claim" not in r)
                assert out.info["final_deal_scores"][b].tolist() == deal["scores"], f"row {b} t {t}"
        if (t + 1) % full_every == 0:
            compare(venv, out, envs, state=True)
        else:  # the acting seat's view (checked by step_and_compare's envs) and state()
            st = venv.state()
            for b, e in enumerate(envs):
                ob = e.observe(e.agent_selection)
                assert np.array_equal(ob["observation"], out.obs[b]), f"row {b} t {t}"
                assert np.array_equal(ob["action_mask"].astype(bool), out.mask[b]), f"row {b} t {t}"
                assert np.array_equal(st[b], e.state()), f"row {b} t {t}: state()"
    compare(venv, out, envs, state=True)
    return games, ended


def _check_coverage(game, games, cfg, ended, later_deals=True):
    kinds = {k for k in _phases(game, cfg) for g in games if _reached(g, k)}
    assert kinds == set(_phases(game, cfg)), kinds
    assert (ended >= 1).all(), ended  # every row went past the end of its deal
    if later_deals:  # positions in the first deal of a game and in later ones
        assert any(g.history for g in games) and any(not g.history for g in games)


@pytest.mark.parametrize("opts", [
    {},
    {"partita_signals": "bolognese3", "deals_per_game": 2, "episode": "deal"},
    {"reward": "game", "deals_per_game": 1, "first_dealer": 1, "reward_scale": 13.0},
])
def test_partita_rows_loaded_at_PAR_4_discard_and_PAR_5_play_positions_play_as_the_rules_objects(opts):
    games, ended = drive_loaded("partita", 12, 130, seed=3, repeat=1 + (not opts), **opts)
    _check_coverage("partita", games, games[0].config, ended, later_deals=games[0].config.deals_per_game > 1)


@pytest.mark.parametrize("opts", [
    {},
    {"round_suits_inverted": False, "moors_double_count": False, "episode": "deal"},
    {"max_hands": 2, "reward": "game", "first_dealer": 0},
])
def test_millone_rows_loaded_at_MIL_2_discard_and_MIL_4_play_positions_play_as_the_rules_objects(opts):
    games, ended = drive_loaded("millone", 12, 110, seed=5, repeat=1 + (not opts), **opts)
    _check_coverage("millone", games, games[0].config, ended, later_deals=bool(opts))  # (6 positions if repeated)


@pytest.mark.parametrize("opts", [
    {"target_score": 300},
    {"ott_signal_players": "all", "ott_signal_timing": "after_top_card_played", "a_monte": "ask_all",
     "episode": "deal"},
    {"a_monte": "off", "moors_double_count": False, "suit_min_natural": 3, "max_hands": 2, "reward": "game"},
    {"target_score": 30},  # OTT-6.1: games won at the declarations
])
def test_ottocento_rows_loaded_at_OTT_3_to_8_positions_play_as_the_rules_objects(opts):
    games, ended = drive_loaded("ottocento", 12, 130, seed=7, full_every=15, repeat=2 if "episode" in opts else 1,
                                **opts)
    _check_coverage("ottocento", games, games[0].config, ended, later_deals=games[0].config.target_score > 30)


def test_ottocento_game_of_after_load_games_is_the_loaded_game_also_a_sampled_world():
    """The inverse: ``_game_of(b)`` rebuilds the loaded object (``to_dict()``: every field, the history
    records, the stream); a world drawn by the sampler (blanked discards of finished hands, a fresh
    stream) loads and rebuilds too, with the same observations and state."""
    cfg = OttocentoGame.Config(target_score=400)
    games = positions("ottocento", cfg, 10, seed=11, max_moves=300)
    assert any(h.get("discards") for g in games for h in g.history)
    v = make_vec("ottocento", 10, seed=0, target_score=400)
    v.load_games(games)
    for b, g in enumerate(games):
        assert v._game_of(b).to_dict() == g.to_dict(), f"row {b}"
    g = next(g for g in games if any(h.get("discards") and h["dealer"] != g.current for h in g.history))
    worlds = Determinizer(g, g.current).sample(3, np.random.default_rng(2))
    assert any(h.get("discards") == [] for w in worlds for h in w.history)  # blanked by the sampler
    v.load_games(worlds, rows=[7, 2, 5])
    for b, w in zip([7, 2, 5], worlds):
        back = v._game_of(b)
        assert back.history == w.history and same_arrays(row_arrays(back.row), row_arrays(w.row))
        assert back.rng.bit_generator.state["state"] == w.rng.bit_generator.state["state"]
        for s in range(4):
            assert np.array_equal(back.observation(s), w.observation(s))
        assert np.array_equal(back.state_vector(), w.state_vector())


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_rows_not_named_keep_their_state_and_only_the_loaded_rows_restart_their_rewards(game):
    v = make_vec(game, 6, seed=4, copy_outputs=True)
    out = v.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        out = v.step(random_actions(out.mask, rng))
    st = v.state()
    games = positions(game, v.config, 2, seed=9)
    new = v.load_games(games, rows=[4, 1])
    keep = [0, 2, 3, 5]
    assert np.array_equal(v.state()[keep], st[keep])
    assert np.array_equal(new.obs[keep], out.obs[keep]) and np.array_equal(new.mask[keep], out.mask[keep])
    assert np.array_equal(new.rewards[keep], out.rewards[keep])
    for b, g in zip([4, 1], games):
        assert np.array_equal(new.obs[b], g.observation(g.current)) and new.seat[b] == g.current
        assert np.array_equal(new.mask[b], g.legal_mask()) and not new.rewards[b].any() and not new.done[b]
        assert np.array_equal(v.state()[b], g.state_vector())


def _snapshot(v):
    return v.state().copy(), v._obs.copy(), v._mask.copy(), v._seat.copy()


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_bad_games_raise_value_error_and_change_nothing(game):
    v = make_vec(game, 3, seed=1)
    v.reset()
    before = _snapshot(v)
    good = positions(game, v.config, 3, seed=2)
    other = {"partita": "millone", "millone": "ottocento", "ottocento": "partita"}[game]
    wrong_game = positions(other, make_vec(other, 1).config, 1, seed=2)[0]
    changed = {"partita": {"deals_per_game": 2}, "millone": {"max_hands": 3},
               "ottocento": {"target_score": 500}}[game]
    wrong_cfg = type(good[0])(good[0].config.replace(**changed), seed=3)
    over = type(good[0])(good[0].config, seed=4)
    while not over.game_over:
        over.apply(over.legal_actions()[0])
    cases = [
        ([good[0], wrong_game, good[2]], None, "not a"),
        ([good[0], good[1], wrong_cfg], None, "other .* options"),
        ([over, good[1], good[2]], None, "is over"),
        (good[:2], None, "2 games for 3 rows"),
        (good[:2], [0], "2 games for 1 rows"),
        (good[:2], [0, 3], r"rows must be in 0\.\.2"),
        (good[:2], [1, 1], "named twice"),
        (good[:2], [0.0, 1.0], "integer row indices"),
    ]
    for games, rows, match in cases:
        with pytest.raises(ValueError, match=match):
            v.load_games(games, rows=rows)
        after = _snapshot(v)
        assert all(np.array_equal(x, y) for x, y in zip(before, after)), match
    fresh = make_vec(game, 3, seed=1)
    with pytest.raises(ValueError, match="never reset"):
        fresh.load_games(good[:1], rows=[0])
    out = fresh.load_games(good)  # every row: no reset needed
    assert all(np.array_equal(out.obs[b], g.observation(g.current)) for b, g in enumerate(good))


@pytest.mark.parametrize("engine", ["vector", "loop"])
@pytest.mark.parametrize("game", sorted(ENV))
def test_observe_false_gives_the_same_masks_seats_rewards_and_ends_with_an_empty_obs(game, engine):
    # make_vec(..., observe=False): for drivers that read only the masks (uniform rollouts, agents/players/pimc.py)
    steps = 200 if engine == "vector" else 90
    full, bare = (make_vec(game, 16, seed=5, engine=engine, observe=o, episode="deal") for o in (True, False))
    a, b = full.reset(), bare.reset()
    rng = np.random.default_rng(5)
    ends = 0
    for _ in range(steps):
        assert b.obs.shape == (16, 0) and b.obs.dtype == np.float32
        for k in ("seat", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(a, k), getattr(b, k)), k
        ends += int(a.done.sum())
        act = random_actions(a.mask, rng)
        a, b = full.step(act), bare.step(act)
    assert ends > 0
    if engine == "vector":  # the engine skipped the observations, not just their output
        assert not bare._obs.any() and full._obs.any()
    if engine == "loop":  # (the loop engine does not load rules objects)
        return
    cls = {"partita": PartitaGame, "millone": MilloneGame, "ottocento": OttocentoGame}[game]
    starts = [cls(seed=i) for i in range(16)]
    full, bare = (make_vec(game, 16, seed=5, engine=engine, observe=o) for o in (True, False))  # episode="game"
    a, b = full.load_games(starts), bare.load_games(starts)
    assert b.obs.shape == (16, 0) and np.array_equal(a.mask, b.mask)
    with pytest.raises(TypeError, match="observe must be True or False"):
        make_vec(game, 2, seed=0, engine=engine, observe="no")
