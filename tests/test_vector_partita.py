"""The batched Partita engine (issue #5): determinism, auto-reset, invariants, bad input.

The engine runs the one set of Partita kernels (``tarot_env/rules/partita.py``) on many rows, as
``PartitaGame`` runs them on one; ``tests/test_golden.py`` holds both to the games recorded before the
one-engine rewrite (every observation, mask, reward, final info and ``state()``), which is what the
step-by-step differential tests against the AEC env checked before.
"""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from aec_helpers import assert_acting_row_is_the_aec_env, random_actions, vec_trace
from tarot_env.rules.partita import FOOL, OBS, STATE, N, PartitaGame
from tarot_env.vector import VecStep, make_vec, row_seeds
from tarot_env.vector.base import pack_cards, unpack_cards
from tarot_env.vector.partita import PartitaVec

G = OBS.pending_signal.start  # observation card sections before the scalar features (the v1 ones follow them)


def card_sections(v: PartitaVec, seat: int) -> np.ndarray:
    """The card sections of every row's observation by ``seat``, from the engine's fields in the order of
    the env's documented layout (seats relative: me, my right, my partner, my left; my team first)."""
    rel, my = [(seat + i) % 4 for i in range(4)], seat % 2
    parts = [v.hands[:, seat], v.discards[:, seat], v.public_discards, v.played[:, rel], v.trick_by[:, rel],
             v.won[:, [my, 1 - my]], v.signal_table[:, rel], v.shown_void[:, rel]]
    return np.concatenate([p.reshape(len(p), -1) for p in parts], axis=1)


def compare_rows(venv: PartitaVec, out: VecStep, envs, state: bool) -> None:
    vstate = venv.state() if state else None
    for b, e in enumerate(envs):
        assert_acting_row_is_the_aec_env(b, out, e)
        assert np.array_equal(venv.sets[b], e.game.row.sets[0]), f"row {b}: card sets"
        assert np.array_equal(venv.table[b], e.game.row.table[0]), f"row {b}: table cells"
        for v in range(4):  # every seat's observation, as the one-row game encodes it
            ref = e.game.observation(v)
            assert np.array_equal(venv.m.obs[b, v], ref), f"row {b} seat {v}"
            assert np.array_equal(venv.scalars[b, v], ref[G:OBS.phase.stop]), f"row {b} seat {v} scalars"
        if state:
            assert np.array_equal(vstate[b], e.state()), f"row {b}: state()"


def covered(sets: np.ndarray, runs: np.ndarray, scalars: slice, played_trick: slice) -> list[int]:
    """The positions a layout's writers fill: the card sets, the table runs, the scalars, played_trick."""
    out = [int(at) + c for _, at in sets.tolist() for c in range(N)]
    out += [int(at) + i for _, at, n in runs.tolist() for i in range(n)]
    return sorted(out + list(range(scalars.start, scalars.stop)) + list(range(played_trick.start, played_trick.stop)))


def test_the_writers_of_the_observation_and_of_the_state_fill_every_feature_exactly_once():
    """The kernels write the card sets (``OBS_SETS``, ``STATE_SETS``), the table runs and the scalars where
    the documented layouts put them (H.1, H.1.1): together each feature once, none left out."""
    from tarot_env.rules import partita as R

    for seat in range(4):
        scalars = slice(R.O_PENDING, R.O_END)
        assert covered(R.OBS_SETS[seat], R.OBS_TABLE_RUNS[seat], scalars, OBS.played_trick) == list(range(OBS.size))
    scalars = slice(R.S_PENDING, R.S_END)
    assert covered(R.STATE_SETS, R.STATE_TABLE_RUNS, scalars, STATE.played_trick) == list(range(STATE.size))


# --- the batched engine is the AEC game: tests/test_golden.py holds both to the games recorded before the
# one-engine rewrite (every option set the differential tests here used); compare_rows is kept for
# tests/test_vector_load_games.py (rows loaded from games step as those games do).

def test_differential_with_validation_off_is_the_same_game():
    a = make_vec("partita", 16, seed=9)
    b = make_vec("partita", 16, seed=9)
    oa, ob = a.reset(), b.reset()
    rng = np.random.default_rng(0)
    for _ in range(300):
        act = random_actions(oa.mask, rng)
        oa, ob = a.step(act), b.step(act, validate=False)
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(oa, f), getattr(ob, f))


# --- determinism and seeds ------------------------------------------------------------------------

def run_trace(num_envs: int, seed: int, steps: int = 250, **opts):
    return vec_trace("partita", num_envs, seed, steps, **opts)


def test_same_seed_same_games_and_other_seed_other_games():
    t1, t2, t3 = run_trace(8, 4), run_trace(8, 4), run_trace(8, 5)
    for x, y in zip(t1, t2):
        assert np.array_equal(x.obs, y.obs) and np.array_equal(x.mask, y.mask)
        assert np.array_equal(x.rewards, y.rewards) and np.array_equal(x.done, y.done)
    assert not np.array_equal(t1[0].obs, t3[0].obs)


def test_row_seeds_do_not_depend_on_the_batch_size_and_reset_with_a_seed_restarts():
    assert row_seeds(4, 3) == row_seeds(4, 10)[:3]
    assert len(set(row_seeds(4, 100))) == 100
    small, big = make_vec("partita", 3, seed=4), make_vec("partita", 10, seed=4)
    assert np.array_equal(small.reset().obs, big.reset().obs[:3])
    v = make_vec("partita", 4, seed=1)
    first = v.reset().obs.copy()
    v.step(random_actions(v._mask, np.random.default_rng(0)))
    assert np.array_equal(v.reset(seed=1).obs, first)
    assert not np.array_equal(v.reset(seed=2).obs, first)


def test_copy_outputs_false_reuses_buffers_and_true_returns_fresh_arrays():
    v = make_vec("partita", 4, seed=0)
    a, b = v.reset(), v.step(random_actions(v._mask, np.random.default_rng(0)))
    assert a.obs is b.obs
    v = make_vec("partita", 4, seed=0, copy_outputs=True)
    a, b = v.reset(), v.step(random_actions(v._mask, np.random.default_rng(0)))
    assert a.obs is not b.obs and not np.array_equal(a.obs, b.obs)


# --- auto-reset bookkeeping -----------------------------------------------------------------------

def test_auto_reset_PAR_3_3_next_game_partner_deals_rewards_restart_and_final_info_is_kept():
    v = make_vec("partita", 32, seed=2, deals_per_game=2)
    out = v.reset()
    rng = np.random.default_rng(1)
    total = np.zeros((32, 4))
    games = 0
    while games < 64:
        last_dealer = v.dealer.copy()
        seat_before = out.seat.copy()
        out = v.step(random_actions(out.mask, rng))
        total += out.step_rewards
        d = np.flatnonzero(out.done)
        for b in d:
            games += 1
            fs = out.info["final_scores"][b]
            assert fs[0] == -fs[1]  # PAR-6.6 zero-sum
            assert out.info["final_winner"][b] == (0 if fs[0] > 0 else 1 if fs[0] < 0 else -1)
            # the game's deal rewards add up to the final score difference / 80 for every seat
            assert np.allclose(total[b], [2 * fs[0] / 80, 2 * fs[1] / 80] * 2)
            assert v.dealer[b] == (last_dealer[b] + 2) % 4  # PAR-3.3
            assert v.deals_played[b] == 0 and (v.scores[b] == 0).all()
            assert out.seat[b] == v.dealer[b] and v.phase[b] == 0  # the new deal starts: discard
            assert out.obs[b, OBS.deal].tolist() == [0.0, 1.0] and (out.obs[b, OBS.scores] == 0).all()
            assert (v._cum[b] == 0).all() and out.rewards[b, seat_before[b]] == out.step_rewards[b, seat_before[b]]
            assert v.final_info(b)["scores"] == fs.tolist()
        total[d] = 0


def test_rewards_since_last_decision_accumulate_per_seat_and_reset_when_the_seat_acts():
    v = make_vec("partita", 16, seed=8, episode="deal")
    out = v.reset()
    rng = np.random.default_rng(2)
    cum = np.zeros((16, 4))
    for _ in range(400):
        actor = out.seat.copy()
        out = v.step(random_actions(out.mask, rng))
        cum[np.arange(16), actor] = 0
        cum += out.step_rewards
        assert np.array_equal(cum, out.rewards)
        assert np.allclose(out.step_rewards.sum(1), 0)  # team-shared, zero-sum (PAR-6.6)
        cum[out.done] = 0


# --- invariants over the batched path -------------------------------------------------------------

@pytest.mark.parametrize("signals", ["none", "bolognese3"])
def test_invariants_of_every_row_at_every_step(signals):
    B = 24
    v = make_vec("partita", B, seed=6, partita_signals=signals)
    out = v.reset()
    rng = np.random.default_rng(3)
    for t in range(500):
        hands, played, disc = v.hands, v.played, v.discards
        # every card is in exactly one hand, played, or discarded
        where = hands.sum(1) + played.sum(1) + disc.sum(1)
        assert (where == 1).all()
        assert (hands.sum(2) == v.hand_sizes).all()
        assert np.array_equal(v.hand_bits, pack_cards(hands))  # the bit sets behind the masks
        assert out.mask.any(1).all()  # someone always has a legal action
        cards = out.mask[:, :N]
        assert not (cards & ~hands[np.arange(B), out.seat]).any()  # only own cards
        assert np.array_equal(out.obs[:, :N].astype(bool), hands[np.arange(B), out.seat])
        for s in range(4):  # H.2, H.1.1: the card sections show the card state, seat-relative
            assert np.array_equal(v.m.obs[:, s, :G], card_sections(v, s).astype(np.float32))
            assert np.array_equal(v.m.obs[:, s, OBS.signal_cards], v.signal_card.reshape(B, -1).astype(np.float32))
        assert (v.public_discards <= disc.any(1)).all()
        # the Fool never counts as the suit led and is always playable when held, in play
        inplay = (v.phase == 1) & hands[np.arange(B), out.seat, FOOL]
        assert out.mask[inplay, FOOL].all()
        assert ((v.scores[:, 0] + v.scores[:, 1]) == 0).all()
        out = v.step(random_actions(out.mask, rng))
        assert np.isfinite(out.obs).all() and out.obs.shape == (B, OBS.size)


def test_card_bit_sets_round_trip():
    rng = np.random.default_rng(0)
    cards = rng.random((50, N)) < 0.3
    assert np.array_equal(unpack_cards(pack_cards(cards), N), cards)


def test_state_has_the_reference_layout_and_all_hands():
    v = make_vec("partita", 5, seed=0)
    v.reset()
    st = v.state()
    assert st.shape == (5, STATE.size) and st.dtype == np.float32
    assert np.array_equal(st[:, STATE.hands].reshape(5, 4, N).astype(bool), v.hands)


# --- bad input: ValueError naming what is wrong; nothing changes -----------------------------------

def test_illegal_action_raises_naming_the_rows_and_legal_actions_and_changes_nothing():
    v = make_vec("partita", 6, seed=0)
    out = v.reset()
    acts = random_actions(out.mask, np.random.default_rng(0))
    bad = acts.copy()
    illegal = int(np.flatnonzero(~out.mask[3])[0])
    bad[3] = illegal
    sets, table, obs4, mask = v.sets.copy(), v.table.copy(), v.m.obs.copy(), out.mask.copy()
    name = PartitaGame.action_name(illegal)
    with pytest.raises(ValueError, match=rf"row 3: seat \d action {illegal} \({name}\); legal: "):
        v.step(bad)
    bad[1] = 99
    with pytest.raises(ValueError, match=r"2 of 6 .*row 1: seat \d action 99 \(out of range 0\.\.56\)"):
        v.step(bad)
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        v.step(acts[:5])
    with pytest.raises(ValueError, match="integer action ids"):
        v.step(acts + 0.5)
    assert np.array_equal(sets, v.sets) and np.array_equal(table, v.table) and np.array_equal(obs4, v.m.obs)
    assert np.array_equal(mask, out.mask)
    v.step(acts)  # the legal actions still apply


def test_make_vec_refuses_unknown_games_options_and_unsupported_modes():
    assert isinstance(tarot_env.make_vec("tarocchini/partita-v1", 2, seed=0), PartitaVec)
    with pytest.raises(ValueError, match="no batched engine for game 'whist'"):
        make_vec("whist", 2)
    with pytest.raises(ValueError, match="unknown option"):
        make_vec("partita", 2, deals=3)
    with pytest.raises(ValueError, match="deals_per_game"):
        make_vec("partita", 2, deals_per_game=0)
    with pytest.raises(ValueError, match="illegal_action='raise' only"):
        make_vec("partita", 2, illegal_action="terminate")
    with pytest.raises(ValueError, match="num_envs"):
        make_vec("partita", 0)
    with pytest.raises(ValueError, match="reset"):
        make_vec("partita", 2).step(np.zeros(2, dtype=int))


# --- the loop engine: the same API for every game, and a second reference for Partita --------------

def test_loop_engine_equals_the_vectorised_engine_step_by_step():
    a = make_vec("partita", 6, seed=21, partita_signals="bolognese3", deals_per_game=1)
    b = make_vec("partita", 6, seed=21, engine="loop", partita_signals="bolognese3", deals_per_game=1)
    oa, ob = a.reset(), b.reset()
    rng = np.random.default_rng(4)
    for t in range(150):
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(oa, f), getattr(ob, f)), (t, f)
        if t % 25 == 0:
            assert np.array_equal(a.state(), b.state())
        for r in np.flatnonzero(oa.done):
            assert a.final_info(r) == b.final_info(r)
        act = random_actions(oa.mask, rng)
        oa, ob = a.step(act), b.step(act)


@pytest.mark.parametrize("game", ["ottocento", "millone"])
def test_other_games_run_behind_the_same_api_through_the_loop_engine(game):
    v = make_vec(game, 3, seed=0, engine="loop")
    out = v.reset()
    env = tarot_env.ENV_IDS[game]
    assert out.obs.shape[0] == 3 and out.mask.any(1).all()
    rng = np.random.default_rng(0)
    for _ in range(60):
        out = v.step(random_actions(out.mask, rng))
    assert v.state().shape[0] == 3
    # every game now has its batched engine (tests/test_vector_millone.py, test_vector_ottocento.py)
    with pytest.raises(ValueError, match="engine 'simd' is not available"):
        make_vec(env, 2, engine="simd")


def test_state_into_a_buffer_and_after_every_kind_of_step():
    v = make_vec("partita", 7, seed=3, partita_signals="bolognese3")
    out = v.reset()
    buf = np.full((7, STATE.size), 9.0, dtype=np.float32)
    rng = np.random.default_rng(8)
    for _ in range(120):
        assert v.state(out=buf) is buf
        fresh = v.state()
        assert np.array_equal(buf, fresh)
        # the state's card sections, absolute seats, in the documented order
        cards = [v.hands, v.discards, v.public_discards, v.played, v.trick_by, v.won, v.signal_table, v.shown_void]
        head = np.concatenate([c.reshape(7, -1) for c in cards], axis=1)
        assert np.array_equal(fresh[:, :head.shape[1]].astype(bool), head)
        assert np.array_equal(fresh[:, STATE.signal_cards].astype(bool), v.signal_card.reshape(7, -1))
        out = v.step(random_actions(out.mask, rng))


@pytest.mark.parametrize("engine", ["vector", "loop"])
@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_every_engine_refuses_a_wrong_state_out_and_fills_a_right_one(game, engine):
    """``VecEnv.state(out=...)``: one check for every game (and the loop engine): shape, dtype, layout."""
    v = make_vec(game, 3, seed=1, engine=engine)
    v.reset()
    n = v.state_size
    for bad in (np.zeros((3, n), dtype=np.float64), np.zeros((2, n), dtype=np.float32),
                np.zeros((3, n + 1), dtype=np.float32), np.zeros((n, 3), dtype=np.float32).T):
        with pytest.raises(ValueError, match=r"state\(out=\.\.\.\) needs a C-contiguous float32 array"):
            v.state(out=bad)
    buf = np.full((3, n), 9.0, dtype=np.float32)
    assert v.state(out=buf) is buf and np.array_equal(buf, v.state())


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_every_batched_engine_views_every_seat_and_refuses_a_bad_seat(game):
    """``VecEnv.observation_of`` / ``m.obs`` (one driver over the games' ``_observe_seat``) and the card views."""
    v = make_vec(game, 3, seed=2, obs_format="dense")
    out = v.reset()
    every = v.m.obs
    assert every.shape == (3, v.num_players, v.obs_size)
    for s in range(v.num_players):
        assert np.array_equal(every[:, s], v.observation_of(s))
    assert np.array_equal(every[np.arange(3), out.seat], out.obs)
    with pytest.raises(ValueError, match="seat must be in"):
        v.observation_of(v.num_players)
    assert v.hands.shape[0] == 3
    with pytest.raises(AttributeError, match="no attribute 'no_such_view'"):
        _ = v.no_such_view
