"""The batched Millone engine: determinism, auto-reset, the Matto's rare cases, invariants, bad input.

The engine runs the one set of Millone kernels and rules (``tarot_env/rules/millone.py``) on many rows,
as ``MilloneGame`` runs them on one; ``tests/test_golden.py`` holds both to the games recorded before the
one-engine rewrite (every observation, mask, reward, final info and ``state()``), which is what the
step-by-step differential tests against the AEC env checked before. The rare Matto cases (deferred
payment, surrender: MIL-4.3, 4.4) are forced here with explicit decks (``set_deck``).
"""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from aec_helpers import assert_acting_row_is_the_aec_env, random_actions, vec_trace
from tarot_env.cards import BOLOGNESE as P
from tarot_env.envs.millone import raw_env
from tarot_env.rules.millone import _GATHERED, MATTO, OBS, STATE, VALUE, N
from tarot_env.vector import VecStep, make_vec, row_seeds
from tarot_env.vector.millone import MilloneVec, pack_bits, unpack_bits

G = _GATHERED  # observation card sections before the scalar features (the v1 shown_void follows them)


def card_sections(v: MilloneVec, seat: int) -> np.ndarray:
    """The card sections of every row's observation by ``seat``, from the engine's fields in the order of
    the env's documented layout (seats relative: me, then the opponent; H.2, H.4: only my hand and discards)."""
    rel = [seat, 1 - seat]
    parts = [v.hands[:, seat], v.discards[:, seat], v.played[:, rel], v.trick_by[:, rel], v.won[:, rel], v.exchanged,
             v.claim_shown[:, rel]]
    return np.concatenate([p.reshape(len(p), -1) for p in parts], axis=1)


def compare_rows(venv: MilloneVec, out: VecStep, envs, state: bool) -> None:
    vstate = venv.state() if state else None
    fields = {f: getattr(venv, f) for f in MilloneVec.CARD_VIEWS}
    obs = venv.m.obs
    for b, e in enumerate(envs):
        assert_acting_row_is_the_aec_env(b, out, e)
        for f, a in fields.items():
            assert np.array_equal(a[b], getattr(e.game, f)), f"row {b}: {f}"
        for v in range(2):  # every seat's view, not only the acting one's
            ref = e.game.observation(v)
            assert np.array_equal(obs[b, v, :G], ref[:G]), f"row {b} seat {v}"
            assert np.array_equal(obs[b, v, OBS.shown_void], ref[OBS.shown_void]), f"row {b} seat {v}"
            assert np.array_equal(obs[b, v, G:OBS.phase.stop], ref[G:OBS.phase.stop]), f"row {b} seat {v} scalars"
        if state:
            assert np.array_equal(vstate[b], e.state()), f"row {b}: state()"


def drive(num_envs: int, steps: int, seed: int, action_seed: int = 7, policy=None, decks=None, **opts):
    """Run the engine alone from explicit deals (``decks``: ``{row: (dealer, deck)}``, dealt before the
    first step) with ``policy`` (random legal actions by default); return the engine."""
    venv = make_vec("millone", num_envs, seed=seed, **opts)
    assert isinstance(venv, MilloneVec)
    venv.reset()
    for b, (dealer, deck) in (decks or {}).items():
        venv.set_deck(b, dealer, deck)
    out = venv.peek()
    rng = np.random.default_rng(action_seed)
    for _ in range(steps):
        actions = random_actions(out.mask, rng) if policy is None else policy(out, rng)
        out = venv.step(actions)
    return venv


def _deck(dealer_first: list[str], nondealer_first: list[str], dealer_stock: list[str],
          nondealer_stock: list[str]) -> np.ndarray:
    """A deck in MIL-2.2 order giving these cards to each player in each phase of the deal."""
    from tarot_env.vector.millone import FIRST_TO, SECOND_TO
    ids = lambda names: [P.parse(n) for n in names]  # noqa: E731
    src = {(0, 0): ids(nondealer_first), (0, 1): ids(dealer_first),
           (1, 0): ids(nondealer_stock), (1, 1): ids(dealer_stock)}
    deck = [src[(0, w)].pop(0) for w in FIRST_TO] + [src[(1, w)].pop(0) for w in SECOND_TO]
    assert sorted(deck) == list(range(N))
    return np.array(deck)


SUITS = "DCSB"
PIPS = [f"{r}{s}" for s in SUITS for r in ("A", "6", "7", "8", "9", "10")]  # 24
QCJ = [f"{r}{s}" for s in SUITS for r in "QCJ"]  # the 12 discardable cards worth more than 1
KINGS = [f"K{s}" for s in SUITS]
TRUMPS_BUT_BEGATO = ["Angel", "World", "Sun", "Moon"] + [f"T{k}" for k in range(16, 4, -1)] + [
    f"Moor{i}" for i in range(1, 5)]  # 20

# MIL-4.4 with MIL-4.3's deferral: the dealer holds the Matto, the Bégato (his only trump) and every
# Queen, Cavalier and Jack, which he discards; the non-dealer holds every other trump and wins every
# trick: the payment is owed (he has won no card), then the Matto surrendered
SURRENDER = _deck(dealer_first=QCJ + KINGS + ["Begato", "Matto"] + PIPS[10:14],
                  nondealer_first=PIPS[:10] + TRUMPS_BUT_BEGATO[:10],
                  dealer_stock=PIPS[14:24], nondealer_stock=TRUMPS_BUT_BEGATO[10:])
# MIL-4.3 owed then paid: the non-dealer discards ten figures and leads the Matto at once (he has won
# no card: owed), then wins tricks with his trumps; he pays with the first empty card he wins
DEFERRED = _deck(nondealer_first=QCJ[:10] + ["Matto"] + TRUMPS_BUT_BEGATO[:9],
                 dealer_first=QCJ[10:] + KINGS + ["Begato"] + PIPS[:15],
                 nondealer_stock=TRUMPS_BUT_BEGATO[9:19], dealer_stock=TRUMPS_BUT_BEGATO[19:] + PIPS[15:24])


def figures_first_matto_first(out, rng):
    """Discards: the most valuable legal card (highest id among equals); play: the Matto when
    legal, else at random."""
    play = out.obs[:, OBS.phase][:, 2] == 1
    score = np.where(out.mask[:, :N], VALUE[None, :] * 100 + np.arange(N)[None, :], -1)
    act = score.argmax(1)
    rnd = random_actions(out.mask, rng)
    return np.where(play, np.where(out.mask[:, MATTO], MATTO, rnd), act)


def lowest_discards_matto_first(out, rng):
    """Discards: the least valuable legal card (SURRENDER's dealer keeps his figures, but has won no
    card, so he owes the payment until MIL-4.4 cancels it); play: the Matto when legal, else at
    random."""
    play = out.obs[:, OBS.phase][:, 2] == 1
    score = np.where(out.mask[:, :N], 1000 - VALUE[None, :] * 100 + np.arange(N)[None, :], -1)
    rnd = random_actions(out.mask, rng)
    return np.where(play, np.where(out.mask[:, MATTO], MATTO, rnd), score.argmax(1))


@pytest.mark.parametrize("policy,case", [(figures_first_matto_first, "owed"),
                                         (lowest_discards_matto_first, "paid")])
def test_MIL_4_3_owed_payment_and_MIL_4_4_surrender_with_explicit_decks(policy, case):
    decks = {0: (1, SURRENDER), 1: (0, SURRENDER), 2: (1, DEFERRED), 3: (0, DEFERRED)}
    v = drive(4, 62, seed=2, policy=policy, decks=decks, episode="deal")  # one hand: 62 decisions
    m = [v.final_info(b)["last_result"]["matto"] for b in range(4)]
    for b, (dealer, _) in decks.items():
        if b < 2:  # the dealer played the Matto and won no trick: owed to the end, then surrendered
            assert m[b] == {"owner": dealer, "paid": None, "deferred": True, "surrendered": True}
        elif case == "owed":  # owed at the Matto's lead, paid during the play with an empty card won
            assert m[b]["owner"] == 1 - dealer and not m[b]["deferred"] and not m[b]["surrendered"]
            assert VALUE[P.parse(m[b]["paid"])] == 1


@pytest.mark.parametrize("mdc", [True, False])
def test_MIL_4_3_M_5_scripted_surrender_last_trick_and_end_of_hand_payments(mdc):
    """The scripted hands of test_millone.matto_script, both dealers: the Matto surrendered (owed to
    the end), paid with the empty card won in the last trick, and paid at the end of the hand from the
    discards (the 10D), as the rules object records them (``matto_script``'s history)."""
    from test_millone import matto_script

    scripts = [matto_script(dealer, coin) for dealer in (0, 1) for coin in (None, "7D", "QD")]
    decks = {b: (b // 3, deck) for b, (deck, _, _) in enumerate(scripts)}
    step = iter(range(62))

    def replay(out, rng):
        t = next(step)
        return np.array([actions[t] for _, actions, _ in scripts])

    v = drive(6, 62, seed=2, policy=replay, decks=decks, episode="deal", moors_double_count=mdc)
    for b, (_, _, h) in enumerate(scripts):
        assert v.final_info(b)["last_result"]["matto"] == h["matto"]
    assert [v.final_info(b)["last_result"]["matto"]["paid"] for b in range(6)] == [None, "7D", "10D"] * 2


# --- determinism and seeds ------------------------------------------------------------------------

def run_trace(num_envs: int, seed: int, steps: int = 150, **opts):
    return vec_trace("millone", num_envs, seed, steps, **opts)


def test_same_seed_same_games_other_seed_other_games_and_validation_off_is_the_same():
    t1, t2, t3 = run_trace(8, 4), run_trace(8, 4), run_trace(8, 5)
    for x, y in zip(t1, t2):
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(x, f), getattr(y, f))
    assert not np.array_equal(t1[0].obs, t3[0].obs)
    a, b = make_vec("millone", 8, seed=9), make_vec("millone", 8, seed=9)
    oa, ob = a.reset(), b.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        act = random_actions(oa.mask, rng)
        oa, ob = a.step(act), b.step(act, validate=False)
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(oa, f), getattr(ob, f))


def test_row_seeds_do_not_depend_on_the_batch_size_and_reset_with_a_seed_restarts():
    small, big = make_vec("millone", 3, seed=4), make_vec("millone", 10, seed=4)
    assert np.array_equal(small.reset().obs, big.reset().obs[:3])
    assert small.row_seeds == row_seeds(4, 3)
    v = make_vec("millone", 4, seed=1)
    first = v.reset().obs.copy()
    v.step(random_actions(v._mask, np.random.default_rng(0)))
    assert np.array_equal(v.reset(seed=1).obs, first)
    assert not np.array_equal(v.reset(seed=2).obs, first)


# --- auto-reset bookkeeping -----------------------------------------------------------------------

def test_auto_reset_decision_7_next_game_other_player_deals_and_rewards_sum_to_the_game():
    B = 24
    v = make_vec("millone", B, seed=2)
    out = v.reset()
    rng = np.random.default_rng(1)
    total = np.zeros((B, 2))
    games = 0
    for _ in range(700):
        last_dealer = v.dealer.copy()
        seat_before = out.seat.copy()
        out = v.step(random_actions(out.mask, rng))
        total += out.step_rewards
        d = np.flatnonzero(out.done)
        for b in d:
            games += 1
            info = v.final_info(b)
            fs = out.info["final_scores"][b]
            assert info["scores"] == fs.tolist() and info["winner"] == out.info["final_winner"][b]
            assert info["winner"] in (0, 1) and fs[info["winner"]] >= 1000  # MIL-6.1 or a claim
            # the hand rewards of a game add up to the score difference / 200
            assert np.allclose(total[b], [(fs[0] - fs[1]) / 200, (fs[1] - fs[0]) / 200])
            assert v.dealer[b] == 1 - last_dealer[b] or "claim" in info["last_result"]  # decision 7
            assert v.hands_played[b] == 0 and (v.scores[b] == 0).all() and v.phase[b] == 0
            assert out.seat[b] == 1 - v.dealer[b]  # the new hand starts: the non-dealer discards
            assert (out.obs[b, OBS.scores] == 0).all() and out.obs[b, OBS.stock_size] == 1.0
            assert (v._cum[b] == 0).all() and out.rewards[b, seat_before[b]] == out.step_rewards[b, seat_before[b]]
        total[d] = 0
    assert games >= 24


def test_rewards_since_last_decision_accumulate_per_seat_and_are_zero_sum():
    v = make_vec("millone", 16, seed=8, episode="deal")
    out = v.reset()
    rng = np.random.default_rng(2)
    cum = np.zeros((16, 2))
    for _ in range(300):
        actor = out.seat.copy()
        out = v.step(random_actions(out.mask, rng))
        cum[np.arange(16), actor] = 0
        cum += out.step_rewards
        assert np.array_equal(cum, out.rewards)
        assert np.allclose(out.step_rewards.sum(1), 0)
        cum[out.done] = 0


# --- invariants over the batched path -------------------------------------------------------------

def test_invariants_of_every_row_at_every_step():
    B = 24
    v = make_vec("millone", B, seed=6)
    out = v.reset()
    rng = np.random.default_rng(3)
    ar = np.arange(B)
    for t in range(250):
        hands, trick, disc, stock, won = v.hands, v.trick_by, v.discards, v.stock, v.won
        # MIL-2.7: every card is in a hand, the stock, the trick on the table, or a pile (won or
        # discarded; a card paid for the Matto moves from the payer's pile to the receiver's)
        where = hands.sum(1) + stock + trick.sum(1) + won.sum(1) + disc.sum(1)
        assert (where == 1).all()
        paid_from_discards = v.exchange_from_discards & (v.exchange_card >= 0)
        assert np.array_equal(won.sum((1, 2)) + trick.sum((1, 2)) - v.played.sum((1, 2)), paid_from_discards)
        assert (hands.sum(2) == v.hand_sizes).all()
        assert np.array_equal(v.hand_bits, pack_bits(hands))
        assert np.array_equal(unpack_bits(v.won_bits | v.disc_bits), won | disc)
        assert out.mask.any(1).all() and not out.mask[:, N:].any()  # signals never legal
        cards = out.mask[:, :N]
        assert not (cards & ~hands[ar, out.seat]).any()  # only own cards
        assert np.array_equal(out.obs[:, :N].astype(bool), hands[ar, out.seat])
        for s in range(2):  # H.2, H.1.1: the card sections show the card state, seat-relative
            assert np.array_equal(v.m.obs[:, s, :G], card_sections(v, s))
            assert np.array_equal(v.m.obs[:, s, OBS.shown_void], v.shown_void[:, [s, 1 - s]].reshape(B, -1))
        disc_phase = v.phase < 2
        assert not cards[disc_phase][:, [P.parse(n) for n in ("Angel", "World", "Begato", "Matto", *KINGS)]].any()
        inplay = (v.phase == 2) & hands[ar, out.seat, MATTO]
        assert out.mask[inplay, MATTO].all()  # MIL-4.3: the Matto is always playable
        # H.4: the opponent's hand, discards and the stock never show in the observation
        assert not (out.obs[:, OBS.hand].astype(bool) & hands[ar, 1 - out.seat]).any()
        out = v.step(random_actions(out.mask, rng))
        assert np.isfinite(out.obs).all() and out.obs.shape == (B, OBS.size)


def test_card_bit_sets_round_trip_and_state_has_the_reference_layout():
    rng = np.random.default_rng(0)
    cards = rng.random((50, 2, N)) < 0.3
    assert np.array_equal(unpack_bits(pack_bits(cards)), cards)
    v = make_vec("millone", 5, seed=0)
    v.reset()
    buf = np.full((5, STATE.size), 9.0, dtype=np.float32)
    assert v.state(out=buf) is buf and buf.dtype == np.float32
    assert np.array_equal(buf[:, STATE.hands].reshape(5, 2, N).astype(bool), v.hands)
    assert np.array_equal(buf[:, STATE.stock].astype(bool), v.stock) and (v.stock.sum(1) == 20).all()


# --- bad input: ValueError naming what is wrong; nothing changes -----------------------------------

def test_illegal_action_raises_naming_the_rows_and_legal_actions_and_changes_nothing():
    v = make_vec("millone", 6, seed=0)
    with pytest.raises(ValueError, match="reset"):
        v.set_deck(0, 0, np.arange(62))
    out = v.reset()
    acts = random_actions(out.mask, np.random.default_rng(0))
    bad = acts.copy()
    illegal = P.parse("Angel")  # an Honour: never discardable (MIL-2.4)
    bad[3] = illegal
    state, obs2, mask = v.state(), v.m.obs.copy(), out.mask.copy()
    with pytest.raises(ValueError, match=r"row 3: seat \d action 0 \(Angel\); legal: "):
        v.step(bad)
    bad[1] = 62  # a signal id: never legal in Millone
    with pytest.raises(ValueError, match=r"2 of 6 millone .*row 1: seat \d action 62 \(signal:VOID\)"):
        v.step(bad)
    bad[1] = 99
    with pytest.raises(ValueError, match=r"row 1: seat \d action 99 \(out of range 0\.\.64\)"):
        v.step(bad)
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        v.step(acts[:5])
    with pytest.raises(ValueError, match="integer action ids"):
        v.step(acts + 0.5)
    assert np.array_equal(state, v.state()) and np.array_equal(obs2, v.m.obs)
    assert np.array_equal(mask, out.mask)
    v.step(acts)  # the legal actions still apply
    with pytest.raises(ValueError, match="permutation of the 62"):
        v.set_deck(0, 0, np.arange(61))
    with pytest.raises(ValueError, match="dealer must be seat 0 or 1"):
        v.set_deck(0, 2, np.arange(62))
    with pytest.raises(ValueError, match="has not finished an episode"):
        v.final_info(0)


def test_make_vec_uses_the_vector_engine_by_default_and_refuses_bad_options():
    assert isinstance(tarot_env.make_vec("tarocchini/millone-v2", 2, seed=0), MilloneVec)
    assert not isinstance(make_vec("millone", 2, seed=0, engine="loop"), MilloneVec)
    with pytest.raises(ValueError, match="unknown option"):
        make_vec("millone", 2, hands=3)
    with pytest.raises(ValueError, match="max_hands"):
        make_vec("millone", 2, max_hands=0)
    with pytest.raises(ValueError, match="illegal_action='raise' only"):
        make_vec("millone", 2, illegal_action="terminate")
    with pytest.raises(ValueError, match="reset"):
        make_vec("millone", 2).step(np.zeros(2, dtype=int))
    assert make_vec("millone", 2).env_config.reward_scale == raw_env().env_config.reward_scale == 200.0


def test_loop_engine_equals_the_vectorised_engine_step_by_step():
    a = make_vec("millone", 4, seed=21, max_hands=2)
    b = make_vec("millone", 4, seed=21, engine="loop", max_hands=2)
    oa, ob = a.reset(), b.reset()
    rng = np.random.default_rng(4)
    for t in range(200):
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(oa, f), getattr(ob, f)), (t, f)
        assert np.array_equal(oa.info["truncated"][oa.done], ob.info["truncated"][ob.done])
        for r in np.flatnonzero(oa.done):
            assert a.final_info(r) == b.final_info(r)
        act = random_actions(oa.mask, rng)
        oa, ob = a.step(act), b.step(act)
    assert np.array_equal(a.state(), b.state())


# --- checkpoints ------------------------------------------------------------------------------------

def test_set_state_of_a_copy_continues_the_same_games_through_hand_ends_claims_and_new_games():
    """``get_state`` (the row arrays, the records, the streams) restored with ``set_state`` into an engine
    playing other games continues the same games, step for step (the State tuple is rebuilt)."""
    import copy

    from test_vector_partita_state import restore

    a = make_vec("millone", 8, seed=3, max_hands=2)
    out = a.reset()
    rng = np.random.default_rng(0)
    for _ in range(150):  # past a hand's end
        out = a.step(random_actions(out.mask, rng))
    state = a.get_state()
    assert "s" not in state and "streams" not in state and "_cc" not in state
    b = make_vec("millone", 8, seed=99, max_hands=2)  # other games, until the state is restored
    b.reset()
    restore(b, copy.deepcopy(state))
    assert b.s.hand_bits is b.hand_bits and b.streams.state is b.rng_state  # rebound to the restored arrays
    assert all(np.array_equal(x, a.arrays()[k]) for k, x in b.arrays().items()) and np.array_equal(b.state(), a.state())
    ends = 0
    for _ in range(400):  # hands, games (max_hands=2) and their automatic resets
        act = random_actions(out.mask, rng)
        out, ob = a.step(act), b.step(act)
        for f in ("seat", "obs", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(out, f), getattr(ob, f)), f
        for r in np.flatnonzero(out.done):
            assert a.final_info(r) == b.final_info(r)
            ends += 1
    assert ends >= 8 and np.array_equal(a.state(), b.state())
