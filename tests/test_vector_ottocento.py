"""The batched Ottocento engine: determinism, auto-reset, invariants, bad input, checkpoints.

That it plays the AEC env's game, step by step and bit for bit over every option set (signals OTT-8.3/8.4,
a monte, B.5 flags, ``episode``, ``reward``, ``max_hands``, ``first_dealer``), is ``tests/test_golden.py``'s
business: both run the kernels of ``tarot_env.rules.ottocento``, and the golden trajectories hold both to
the games recorded before the one-engine rewrite.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from aec_helpers import assert_acting_row_is_the_aec_env, random_actions, row_arrays, same_arrays
from tarot_env.rules.ottocento import A_MONTE, MATTO, NUM_ACTIONS, OBS, PLAY_ON, STATE, N
from tarot_env.vector import VecStep, make_vec, row_seeds
from tarot_env.vector.ottocento import OttocentoVec


def mostly_play_on(out, rng, p_a_monte=0.25):
    """Random legal actions, but say "a monte" with probability ``p_a_monte`` (so hands get played),
    and prefer the Matto when legal (so OTT-7.3/7.4 settlements happen)."""
    a = random_actions(out.mask, rng)
    am = out.mask[:, A_MONTE] & out.mask[:, PLAY_ON]
    a = np.where(am, np.where(rng.random(len(a)) < p_a_monte, A_MONTE, PLAY_ON), a)
    return np.where(out.mask[:, MATTO] & (rng.random(len(a)) < 0.7), MATTO, a)


def compare_rows(venv: OttocentoVec, out: VecStep, envs, state: bool) -> None:
    """Rows and AEC envs in the same positions: the acting seat, its observation and mask, the row's arrays,
    every seat's observation, and with ``state`` ``state()`` and the row's whole rules object (``to_dict()``).
    Kept for tests/test_vector_load_games.py (rows loaded from games step as those games do); that the engine
    is the AEC game from a reset is tests/test_golden.py's business."""
    vstate = venv.state() if state else None
    every = [venv.observation_of(v) for v in range(4)]
    for b, e in enumerate(envs):
        assert_acting_row_is_the_aec_env(b, out, e)
        assert same_arrays(row_arrays(venv, b), row_arrays(e.game.row, 0)), f"row {b}: the row's arrays"
        for v in range(4):
            assert np.array_equal(every[v][b], e.game.observation(v)), f"row {b} seat {v}"
        if state:
            assert np.array_equal(vstate[b], e.state()), f"row {b}: state()"
            assert venv.games[b].to_dict() == e.game.to_dict(), f"row {b}: rules object"


# --- determinism, seeds, auto-reset, invariants ----------------------------------------------------

def _play(seed, steps, validate=True, B=4, **opts):
    v = make_vec("ottocento", B, seed=seed, copy_outputs=True, **opts)
    out = v.reset()
    rng = np.random.default_rng(0)
    trace = []
    for _ in range(steps):
        a = random_actions(out.mask, rng)
        out = v.step(a, validate=validate)
        trace.append((out.obs.copy(), out.mask.copy(), out.rewards.copy(), out.done.copy()))
    return trace


def test_same_seed_same_games_other_seed_other_games_and_validation_off_is_the_same():
    a, b, c = _play(9, 60), _play(9, 60, validate=False), _play(10, 60)
    for x, y in zip(a, b):
        assert all(np.array_equal(p, q) for p, q in zip(x, y))
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a, c))


def test_row_seeds_do_not_depend_on_the_batch_size_and_reset_with_a_seed_restarts():
    assert row_seeds(4, 8) == row_seeds(4, 16)[:8]
    v = make_vec("ottocento", 3, seed=4, copy_outputs=True)
    first = v.reset()
    v.step(random_actions(first.mask, np.random.default_rng(1)))
    again = v.reset(seed=4)
    assert np.array_equal(first.obs, again.obs) and np.array_equal(first.mask, again.mask)
    other = v.reset(seed=5)
    assert v.row_seeds == row_seeds(5, 3) and not np.array_equal(first.obs, other.obs)


def test_auto_reset_OTT_1_3_next_game_deal_passes_and_rewards_sum_to_the_game():
    v = make_vec("ottocento", 4, seed=2, target_score=60, a_monte="off")
    out = v.reset()
    rng = np.random.default_rng(3)
    total = np.zeros((4, 4))
    dealer_before = [g.dealer for g in v.games]
    for _ in range(2000):
        out = v.step(random_actions(out.mask, rng))
        total += out.step_rewards
        if out.done[0]:
            info = v.final_info(0)
            s = info["scores"]
            assert info["winner"] in (0, 1)
            g = v.games[0]  # the next game, dealt by the seat after the last dealer (OTT-1.3)
            assert g.hands_played == 0 and len(g.history) == 0
            assert out.seat[0] == g.current and out.obs[0, OBS.phase.start + 3] == 0  # discard first
            # with deal rewards the game's rewards sum to the final score difference / reward_scale
            assert np.isclose(total[0, 0], (s[0] - s[1]) / 200.0)
            assert g.dealer == (dealer_before[0] + 1) % 4
            break
        dealer_before = [g.dealer for g in v.games]
    else:
        pytest.fail("no game finished")
    assert np.allclose(total[:, 0], -total[:, 1]) and np.allclose(total[:, 0], total[:, 2])


def test_invariants_of_every_row_at_every_step():
    v = make_vec("ottocento", 6, seed=8, target_score=200)
    out = v.reset()
    rng = np.random.default_rng(4)
    for _ in range(400):
        assert out.mask.any(1).all()  # never a dead end
        assert out.obs.dtype == np.float32 and out.obs.shape == (6, OBS.size)
        hands, discards, declared = v.hands, v.discards, v.declared
        assert not (declared & ~(hands | v.played)).any()  # declared cards stay in the hand until played (OTT-5.2)
        held = hands.sum((1, 2)) + v.played.sum((1, 2)) + discards.sum((1, 2))
        assert ((held == N) | (held == 20)).all()  # the whole pack, or the first round (a monte)
        assert np.allclose(out.step_rewards[:, 0], -out.step_rewards[:, 1])  # zero-sum, team-shared
        assert np.allclose(out.step_rewards[:, 0], out.step_rewards[:, 2])
        out = v.step(random_actions(out.mask, rng))
    st = v.state()
    assert st.shape == (6, STATE.size) and st.dtype == np.float32


def test_illegal_action_raises_naming_the_rows_and_legal_actions_and_changes_nothing():
    v = make_vec("ottocento", 3, seed=1, copy_outputs=True)
    out = v.reset()
    before = row_arrays(v)
    bad = random_actions(out.mask, np.random.default_rng(0))
    bad[1] = int(np.flatnonzero(~out.mask[1])[0])
    with pytest.raises(ValueError, match="row 1"):
        v.step(bad)
    assert same_arrays(row_arrays(v), before)
    with pytest.raises(ValueError, match="shape"):
        v.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        v.step(np.full(3, NUM_ACTIONS))
    with pytest.raises(ValueError, match="integer"):
        v.step(np.full(3, 0.5))
    with pytest.raises(ValueError, match="finished"):
        v.final_info(0)
    with pytest.raises(ValueError, match="row"):
        v.final_info(7)
    fresh = make_vec("ottocento", 3, seed=1)
    with pytest.raises(ValueError, match="reset"):
        fresh.step(np.zeros(3, dtype=np.int64))


def test_make_vec_uses_the_vector_engine_by_default_and_refuses_bad_options():
    assert isinstance(make_vec("ottocento", 2, seed=0), OttocentoVec)
    assert isinstance(make_vec("tarocchini/ottocento-v2", 2, seed=0), OttocentoVec)
    assert not isinstance(make_vec("ottocento", 2, seed=0, engine="loop"), OttocentoVec)
    with pytest.raises(ValueError):
        make_vec("ottocento", 2, seed=0, ott_signal_players="nobody")
    with pytest.raises(ValueError):
        make_vec("ottocento", 2, seed=0, no_such_option=1)
    with pytest.raises(ValueError):
        make_vec("ottocento", 0, seed=0)
    with pytest.raises(ValueError, match="raise"):
        make_vec("ottocento", 2, seed=0, illegal_action="terminate")


def test_loop_engine_equals_the_batched_engine_step_by_step():
    a = make_vec("ottocento", 4, seed=6, copy_outputs=True, target_score=100)
    b = make_vec("ottocento", 4, seed=6, copy_outputs=True, target_score=100, engine="loop")
    oa, ob = a.reset(), b.reset()
    rng = np.random.default_rng(2)
    for _ in range(300):
        for x, y in ((oa.seat, ob.seat), (oa.obs, ob.obs), (oa.mask, ob.mask), (oa.rewards, ob.rewards),
                     (oa.done, ob.done), (oa.info["truncated"], ob.info["truncated"])):
            assert np.array_equal(x, y)
        act = random_actions(oa.mask, rng)
        oa, ob = a.step(act), b.step(act)
    assert np.array_equal(a.state(), b.state())


# --- checkpoints: get_state / set_state (the trainer's exact --resume) -------------------------------

def _through_checkpoint(encoded: dict) -> dict:
    """The trainer's path: saved with torch and loaded with weights_only=True."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(encoded, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("opts", [dict(target_score=120),
                                  dict(episode="deal", ott_signal_players="all", a_monte="ask_all",
                                       ott_signal_timing="after_top_card_played", reward="game")])
def test_snapshot_mid_game_restored_into_a_fresh_engine_continues_identically(opts):
    from agents.training.rollout import _load_object_state

    assert OttocentoVec.checkpointable
    a = make_vec("ottocento", 6, seed=13, copy_outputs=True, **opts)
    out = a.reset()
    rng = np.random.default_rng(5)
    for _ in range(137):  # rows mid-hand: a trick under way, signals pending, declarations open
        out = a.step(mostly_play_on(out, rng))
    snap = _through_checkpoint(_object_state_of(a))
    b = make_vec("ottocento", 6, seed=99, copy_outputs=True, **opts)  # another seed: all restored
    b.reset()
    _load_object_state(b, snap)
    assert same_arrays(row_arrays(a), row_arrays(b)) and np.array_equal(a.state(), b.state())
    rng_b = np.random.Generator(np.random.PCG64())
    rng_b.bit_generator.state = rng.bit_generator.state
    ob, episodes = out, 0
    for t in range(600):
        act = mostly_play_on(out, rng)
        assert np.array_equal(act, mostly_play_on(ob, rng_b))
        out, ob = a.step(act), b.step(act)
        for x, y in ((out.seat, ob.seat), (out.obs, ob.obs), (out.mask, ob.mask), (out.rewards, ob.rewards),
                     (out.step_rewards, ob.step_rewards), (out.done, ob.done),
                     *((out.info[k], ob.info[k]) for k in out.info)):
            assert np.array_equal(x, y), f"step {t}"
        for r in np.flatnonzero(out.done):
            episodes += 1
            assert a.final_info(r) == b.final_info(r)
        if t % 50 == 0:
            assert np.array_equal(a.state(), b.state()) and same_arrays(row_arrays(a), row_arrays(b))
            assert all(ga.to_dict() == gb.to_dict() for ga, gb in zip(a.games, b.games))
    assert episodes >= 6
    assert [json.dumps(g.to_dict()) for g in a.games] == [json.dumps(g.to_dict()) for g in b.games]


def _object_state_of(venv):
    from agents.training.rollout import _object_state

    return _object_state(venv)


def test_set_state_refuses_a_state_of_another_batch_size():
    a = make_vec("ottocento", 3, seed=1)
    a.reset()
    state = a.get_state()
    b = make_vec("ottocento", 2, seed=1)
    b.reset()
    with pytest.raises(ValueError, match="num_envs=2"):
        b.set_state(state)


def test_set_state_refuses_rows_of_another_engine_version():
    """A state whose rows' arrays are not this engine's (an earlier one's: a block of 1,712 cells, no played or
    won card sets; 2026-12-04's: a block of 600 cells, no discards, signals, M(hand) ... as card sets) is refused,
    naming them, before anything changes."""
    a = make_vec("ottocento", 3, seed=1)
    a.reset()
    state = a.get_state()
    before = {k: v.copy() for k, v in a.arrays().items()}
    old = {k: v for k, v in state.items() if k not in ("pbits", "wbits")}
    old["blocks"] = np.zeros((3, 1712), dtype=bool)
    with pytest.raises(ValueError, match="pbits, wbits.*another version"):
        a.set_state(old)
    new = ("xbits", "mhand", "sbits", "said", "voids", "paid")
    old = {k: v for k, v in state.items() if k not in new}
    old.update(blocks=np.zeros((3, 600), bool), mbits=np.zeros(3, np.uint64), declarable4=np.zeros((3, 4, 62), bool))
    with pytest.raises(ValueError, match=", ".join(new) + ".*another version"):
        a.set_state(old)
    assert all(np.array_equal(v, before[k]) for k, v in a.arrays().items())  # nothing was set


def test_a_checkpointed_state_of_another_engine_version_is_refused_and_changes_nothing():
    """The trainer's --resume decodes the engine state against the running engine's attributes: a
    state with a missing or unknown attribute (another version of the engine) is refused by name."""
    from agents.training.rollout import _load_object_state

    a = make_vec("ottocento", 3, seed=1, copy_outputs=True)
    a.reset()
    snap = _through_checkpoint(_object_state_of(a))
    b = make_vec("ottocento", 3, seed=2, copy_outputs=True)
    before = b.reset()
    for broken in ({k: v for k, v in snap.items() if k != "mhand"}, {**snap, "_from_the_future": 1}):
        with pytest.raises(ValueError, match="another version of the batched engine"):
            _load_object_state(b, broken)
        after = b.peek() if hasattr(b, "peek") else b._result()
        assert np.array_equal(after.obs, before.obs) and np.array_equal(after.mask, before.mask)
    _load_object_state(b, snap)  # the whole state loads
    assert np.array_equal(b._result().obs, a._result().obs)


PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645  # numpy's PCG64 multiplier (pcg_setseq_128_step_r)


def _generator_whose_next_output_is_zero(inc: int) -> np.random.Generator:
    """A PCG64 generator whose next raw 64-bit output is 0 (its next state is 0: the state before is
    ``-inc / MULT`` mod 2**128), so that its next ``integers(2**63)`` (the next game's seed) is 0."""
    state = (-inc * pow(PCG_MULT, -1, 1 << 128)) % (1 << 128)
    g = np.random.Generator(np.random.PCG64())
    g.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0,
                             "uinteger": 0}
    return g


def test_OTT_1_3_a_next_game_seeded_below_2_32_is_dealt_as_the_reference_next_game():
    """OTT-10.3 ends the game (``max_hands=1``) and OTT-1.3 deals the next one in the row: its stream is
    ``default_rng(rng.integers(2**63))``. A seed below 2**32 (one in 2**31) is not seeded by the compiled
    step but by numpy in Python (``OttocentoRows.act``: the ``redeal`` rows); a stream whose next draw is 0
    takes that path, and the row then plays as the reference game's ``next_game()``."""
    from tarot_env.rules.ottocento import OttocentoGame

    assert _generator_whose_next_output_is_zero(2 * 12345 + 1).integers(2**63) == 0
    v = make_vec("ottocento", 2, seed=4, max_hands=1)
    out = v.reset()
    g = OttocentoGame.of_row(v, 0, [])  # the reference: row 0's game
    for stream in (v.streams, g.row.streams):  # the hand draws nothing: the next draw is the next game's seed
        stream.load([0], [_generator_whose_next_output_is_zero(2 * 12345 + 1)])
    rng = np.random.default_rng(0)
    for _ in range(400):
        act = random_actions(out.mask, rng)
        g.apply_unchecked(int(act[0]))
        out = v.step(act)
        if out.done[0]:
            break
    else:
        pytest.fail("the one-hand game did not end")
    assert g.game_over and v.final_info(0)["scores"] == g.scores.tolist()
    nxt = g.next_game()  # seed 0: the row's next draw
    assert np.array_equal(nxt.deck, v.deck[0]) and nxt.dealer == v.dealer[0] == (g.dealer + 1) % 4
    for _ in range(30):  # and plays on as it
        assert np.array_equal(out.obs[0], nxt.observation(nxt.current))
        assert np.array_equal(out.mask[0], nxt.legal_mask())
        act = random_actions(out.mask, rng)
        nxt.apply_unchecked(int(act[0]))
        out = v.step(act)
