"""Millone rules (RULES.md Part D on Part B): deal, claim, discards, play, Matto, scoring, game end."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tarot_env.cards import BOLOGNESE as P
from tarot_env.engine import trick_winner
from tarot_env.rules.combos import COMBO_SCALE, combo_breakdown, combo_points, scoring_cards
from tarot_env.rules.millone import (
    BOLOGNESE_UNIFORM,
    DISCARDABLE,
    MATTO,
    OBS,
    PLAY_ON,
    STATE,
    STATE_SIZE,
    TARGET,
    VALUE,
    MilloneConfig,
    MilloneGame,
    MilloneRows,
    N,
    Phase,
    card_points,
    fool_payment,
    game_results,
    pack_bits,
)

ids = P.parse_many
NAMES = P.names


def random_step(g: MilloneGame, rng) -> int:
    legal = np.flatnonzero(g.legal_mask())
    a = int(legal[rng.integers(len(legal))])
    g.apply_unchecked(a)
    return a


def positions(dealer: int):
    """Deck positions of each seat's cards in deal order (MIL-2.2, MIL-2.5)."""
    pos = {0: [], 1: []}
    nd, i = 1 - dealer, 0
    for r in range(4):
        for seat in (nd, dealer):
            k = 7 if seat == dealer and r == 3 else 5
            pos[seat] += list(range(i, i + k))
            i += k
    for _ in range(2):
        for seat in (nd, dealer):
            pos[seat] += list(range(i, i + 5))
            i += 5
    return pos


def deck_for(dealer: int, nd_cards: list[int], d_cards: list[int]) -> np.ndarray:
    """A deck giving the non-dealer ``nd_cards`` (20 first-phase + 10 second-phase, in order) and
    the dealer ``d_cards`` (22 + 10)."""
    assert len(nd_cards) == 30 and len(d_cards) == 32 and sorted(nd_cards + d_cards) == list(range(N))
    pos = positions(dealer)
    deck = np.empty(N, dtype=np.int64)
    deck[pos[1 - dealer]] = nd_cards
    deck[pos[dealer]] = d_cards
    return deck


def game_with_deck(dealer: int, deck, **cfg) -> MilloneGame:
    g = MilloneGame(MilloneConfig(**cfg), seed=0, first_dealer=dealer)
    g.set_deck(dealer, deck)
    return g


# --- the deal (MIL-2) ----------------------------------------------------------------------------

@pytest.mark.parametrize("dealer", [0, 1])
def test_MIL_2_2_first_phase_four_rounds_of_5_dealer_takes_7_last_stock_of_20(dealer):
    g = game_with_deck(dealer, np.arange(N))
    nd = 1 - dealer
    assert np.flatnonzero(g.hands[nd]).tolist() == [*range(0, 5), *range(10, 15), *range(20, 25), *range(30, 35)]
    assert np.flatnonzero(g.hands[dealer]).tolist() == [*range(5, 10), *range(15, 20), *range(25, 30),
                                                        *range(35, 42)]
    assert g.hand_sizes[nd] == 20 and g.hand_sizes[dealer] == 22
    assert np.flatnonzero(g.stock).tolist() == list(range(42, 62))  # MIL-2.7: 20 + 22 + 20 = 62
    assert g.phase == Phase.DISCARD and g.current == nd


def test_MIL_2_4_and_2_5_discard_10_each_nondealer_first_then_two_more_rounds_of_5():
    g = game_with_deck(0, np.arange(N))
    nd, d = 1, 0
    order = []
    while g.phase == Phase.DISCARD:
        order.append(g.current)
        legal = np.flatnonzero(g.legal_mask())
        assert not (legal >= N).any()
        assert DISCARDABLE[legal].all() and g.hands[g.current][legal].all()
        g.apply(int(legal[-1]))
    assert order == [nd] * 10 + [d] * 10  # one card per decision, the non-dealer first
    assert g.discards.sum(axis=1).tolist() == [10, 10]
    # MIL-2.5: non-dealer 42-46, dealer 47-51, non-dealer 52-56, dealer 57-61
    assert set(range(42, 47)) | set(range(52, 57)) <= set(np.flatnonzero(g.hands[nd]))
    assert set(range(47, 52)) | set(range(57, 62)) <= set(np.flatnonzero(g.hands[d]))
    assert g.hand_sizes == [22, 20] and not g.stock.any()
    assert g.phase == Phase.SECOND_DISCARD and g.current == d


def test_MIL_2_6_dealer_discards_2_more_then_MIL_4_1_non_dealer_leads():
    g = game_with_deck(1, np.arange(N))
    for _ in range(20):
        g.apply(int(np.flatnonzero(g.legal_mask())[0]))
    assert g.phase == Phase.SECOND_DISCARD
    for _ in range(2):
        assert g.current == 1
        legal = np.flatnonzero(g.legal_mask())
        assert DISCARDABLE[legal].all()
        g.apply(int(legal[0]))
    assert g.phase == Phase.PLAY and g.current == g.leader == 0
    assert g.hand_sizes == [20, 20] and g.discards.sum(axis=1).tolist() == [10, 12]  # MIL-2.7


def test_MIL_2_4_honours_and_kings_are_never_discardable():
    forbidden = ids("Angel World Begato Matto KD KC KS KB")
    # give the non-dealer every forbidden card: they are never legal discards
    rest = [c for c in range(N) if c not in forbidden]
    nd_cards = forbidden + rest[:22]
    d_cards = rest[22:]
    g = game_with_deck(0, deck_for(0, nd_cards, d_cards))
    assert g.hands[1, forbidden].all()
    while g.phase != Phase.PLAY:
        mask = g.legal_mask()
        assert not mask[forbidden].any()
        g.apply(int(np.flatnonzero(mask)[0]))
    assert not g.discards[:, forbidden].any()
    with pytest.raises(ValueError, match="illegal action"):
        g2 = game_with_deck(0, deck_for(0, nd_cards, d_cards))
        g2.apply(P.parse("KD"))


def test_MIL_2_1_dealers_alternate_and_the_first_is_random():
    firsts = set()
    rng = np.random.default_rng(0)
    for seed in range(20):
        g = MilloneGame(seed=seed)
        firsts.add(g.dealer)
        while not g.game_over:
            random_step(g, rng)
        dealers = [h["dealer"] for h in g.history if not h.get("claim")]
        assert all(a != b for a, b in zip(dealers, dealers[1:]))
    assert firsts == {0, 1}


def test_set_deck_rejects_a_bad_deck_by_name():
    g = MilloneGame(seed=0)
    with pytest.raises(ValueError, match="permutation of the 62"):
        g.set_deck(0, list(range(61)) + [0])
    with pytest.raises(ValueError, match="dealer must be seat 0 or 1"):
        g.set_deck(2, list(range(N)))


# --- the game claim (MIL-3) -------------------------------------------------------------------------

CLAIM_HAND = ids("Angel World Sun Moon T16 T15 T14 Begato Matto KD QD CD JD AD KC QC CC JC KS QS")


def claim_deck(dealer: int) -> np.ndarray:
    rest = [c for c in range(N) if c not in CLAIM_HAND]
    return deck_for(dealer, CLAIM_HAND + rest[:10], rest[10:])


def test_MIL_3_2_a_player_whose_score_plus_hand_combinations_reach_1000_wins_at_once():
    g = MilloneGame(seed=0, first_dealer=0)
    combos = combo_points(P.mask(CLAIM_HAND))
    assert combos > 100
    g.scores[:] = [0, TARGET - combos]  # the non-dealer (seat 1) gets the claim hand
    g.set_deck(0, claim_deck(0))
    assert g.game_over and g.winner == 1 and g.phase == Phase.GAME_OVER
    h = g.history[-1]
    assert h["claim"] and h["claimant"] == 1 and h["scores"] == [0, combos]
    assert g.scores.tolist() == [0, TARGET]  # the claim is the new score
    shown = scoring_cards(P.mask(CLAIM_HAND))
    assert h["shown"] == P.names_of(shown)
    # H.4: the claimant's combinations are shown to both players
    for seat in (0, 1):
        o = g.observation(seat)
        mine, theirs = o[OBS.claim_shown].reshape(2, N) > 0
        assert np.array_equal(mine if seat == 1 else theirs, shown)
        assert not (theirs if seat == 1 else mine).any()
    assert not g.legal_mask().any()
    with pytest.raises(ValueError, match="game is over"):
        g.apply(0)


def test_MIL_3_2_just_below_1000_is_no_claim():
    g = MilloneGame(seed=0, first_dealer=0)
    combos = combo_points(P.mask(CLAIM_HAND))
    g.scores[:] = [0, TARGET - combos - 1]
    g.set_deck(0, claim_deck(0))
    assert not g.game_over and g.phase == Phase.DISCARD and not g.history


def test_MIL_3_3_both_can_claim_the_higher_claim_wins_and_a_tie_is_no_claim():
    g = MilloneGame(seed=0, first_dealer=0)
    deck = claim_deck(0)
    g.set_deck(0, deck)
    combos = [combo_points(g.hands[p]) for p in (0, 1)]
    assert min(combos) > 0
    g.scores[:] = [TARGET - combos[0] + 5, TARGET - combos[1] + 3]
    g.set_deck(0, deck)
    assert g.game_over and g.winner == 0 and g.history[-1]["claims"] == [TARGET + 5, TARGET + 3]
    g = MilloneGame(seed=0, first_dealer=0)
    g.scores[:] = [TARGET - combos[0] + 4, TARGET - combos[1] + 4]
    g.set_deck(0, deck)
    assert not g.game_over and not g.history  # MIL-3.3: an exact tie: play the hand


# --- play (MIL-4, B.4) ------------------------------------------------------------------------------

def test_MIL_4_2_legal_play_is_follow_else_trump_else_any_and_the_matto_always():
    rng = np.random.default_rng(3)
    checked = 0
    for seed in range(30):
        g = MilloneGame(seed=seed)
        while not g.game_over:
            if g.phase == Phase.PLAY:
                mask = g.legal_mask()
                assert not mask[N:].any()  # no signals in Millone
                hand = g.hands[g.current]
                legal = mask[:N]
                if g.trick and g.trick[0][1] != MATTO:
                    led = P.suit[g.trick[0][1]]
                    if (hand & (P.suit == led)).any():
                        expect = hand & (P.suit == led)
                    elif (hand & (P.suit == 4)).any():
                        expect = hand & (P.suit == 4)
                    else:
                        expect = hand.copy()
                    expect[MATTO] = hand[MATTO]
                    assert np.array_equal(legal, expect)
                    checked += 1
                elif not g.trick:
                    assert np.array_equal(legal, hand)
            random_step(g, rng)
    assert checked > 1000


@pytest.mark.parametrize("inverted", [True, False])
def test_M_3_round_suits_ranking_option(inverted):
    g = MilloneGame(MilloneConfig(round_suits_inverted=inverted), seed=0)
    assert MilloneGame.pack is P  # ids and names never change
    assert g.pack is (P if inverted else BOLOGNESE_UNIFORM)
    assert g.pack.names == P.names and np.array_equal(g.pack.value, P.value)
    for suit in "DC":
        ace_wins = trick_winner(g.pack, [(0, P.parse("10" + suit)), (1, P.parse("A" + suit))]) == 1
        assert ace_wins == inverted  # B.2.3: A 6 7 8 9 10 in the round suits
        assert trick_winner(g.pack, [(0, P.parse("J" + suit)), (1, P.parse("A" + suit))]) == 0
    # the long suits never change
    assert trick_winner(g.pack, [(0, P.parse("10S")), (1, P.parse("AS"))]) == 0
    h = MilloneGame.from_dict(json.loads(json.dumps(g.to_dict())))
    assert h.pack is g.pack and g.clone().pack is g.pack


def test_B_2_2_equal_moors_the_later_wins():
    g = MilloneGame(seed=0)
    assert trick_winner(g.pack, [(0, P.parse("Moor1")), (1, P.parse("Moor3"))]) == 1
    assert trick_winner(g.pack, [(1, P.parse("Moor3")), (0, P.parse("Moor1"))]) == 0


# --- the Matto (MIL-4.3, MIL-4.4) -------------------------------------------------------------------

def test_MIL_4_3_M_5_payments_during_play_come_from_the_won_cards_never_the_discards():
    """150 seeded random games (every hand): a payment made during the play is an empty card the
    payer had won in tricks (never a hidden discard), made at the end of the Matto's trick if he had
    one, else owed (public) and made at the end of the first trick that brings him one; it is public
    at once; a payment at the end of the hand is the lowest-valued card of the whole pile."""
    rng = np.random.default_rng(0)
    counts = {"at_once": 0, "owed_then_paid": 0, "at_the_end": 0, "surrendered": 0, "matto_hands": 0,
              "paid_in_play": 0}
    for seed in range(150):
        g = MilloneGame(seed=seed)
        while not g.game_over:
            if g.phase != Phase.PLAY:
                random_step(g, rng)
                continue
            before_won, before_disc = g.won.copy(), g.discards.copy()
            owed, card_before, hand = g.exchange_owed, g.exchange_card, len(g.history)
            n_tricks = len(g.tricks)
            random_step(g, rng)
            if len(g.history) != hand or len(g.tricks) == n_tricks:
                continue  # the hand ended (checked on its record below) or the trick is still open
            owner = g.excuse_owner
            if g.exchange_card >= 0 and card_before < 0:  # a payment at the end of this trick
                c = g.exchange_card
                trick_cards, winner = [card for _, card in g.tricks[-1][0]], g.tricks[-1][1]
                assert not before_disc[owner, c] and g.discards[owner].sum() == before_disc[owner].sum()
                assert not g.exchange_from_discards
                assert VALUE[c] == 1 and c != MATTO and g.won[1 - owner, c] and not g.won[owner, c]
                if owed < 0:  # the Matto's trick: he had an empty card won already
                    assert MATTO in trick_cards and winner != owner and before_won[owner, c]
                    counts["at_once"] += 1
                else:  # owed until this trick, which he won, brought him his first empty card
                    assert winner == owner and c in trick_cards
                    assert not (before_won[owner] & (VALUE == 1)).any()
                    counts["owed_then_paid"] += 1
                for seat in (0, 1):  # decision 2: public at once, the debt cleared
                    o = g.observation(seat)
                    assert o[OBS.exchanged][c] == 1 and not o[OBS.exchange_owed].any()
                    assert o[OBS.won].reshape(2, N)[(1 - owner - seat) % 2, c] == 1
            if g.exchange_owed >= 0:  # owed: public, and he has won no empty card yet
                assert g.exchange_owed == owner and g.exchange_card < 0
                assert not (g.won[owner] & (VALUE == 1)).any()
                for seat in (0, 1):
                    assert g.observation(seat)[OBS.exchange_owed][(owner - seat) % 2] == 1
        for h in g.history:
            m = h.get("matto")
            if not m or m["owner"] < 0:
                continue
            counts["matto_hands"] += 1
            if m["surrendered"]:
                counts["surrendered"] += 1
                assert m["paid"] is None and h["tricks_won"][m["owner"]] == 0
            elif m["deferred"]:  # still owed at the end: the lowest value of the whole pile
                counts["at_the_end"] += 1
                o, paid = m["owner"], P.parse(m["paid"])
                pile = piles_from_history(h)[o]
                pile[paid], pile[MATTO] = True, False
                assert VALUE[paid] == VALUE[pile].min()
            else:  # paid during the play (seen above, unless in the hand's last trick)
                assert m["paid"] is not None
                counts["paid_in_play"] += 1
            assert all(x % 2 == 0 for x in h["pile_sizes"])  # B.3.4
    assert counts["at_once"] > 50 and counts["owed_then_paid"] > 5
    assert 0 <= counts["paid_in_play"] - counts["at_once"] - counts["owed_then_paid"] <= 10
    # (the end-of-hand payment and the surrender are rare in random play: the scripted tests below)


def test_decision_1_payment_prefers_a_pip_in_no_combination_then_the_least_combination_loss():
    pile = P.mask(ids("QD CD 7D AS AB T5 T16 Moor1"))
    assert NAMES[fool_payment(pile, empty_only=True)] == "7D"
    pile = P.mask(ids("QD CD AS AB Matto T5 Moor1"))
    # aces AS AB + Matto is a sequence (10): giving T5 costs nothing
    assert NAMES[fool_payment(pile, empty_only=True)] == "T5"
    pile = P.mask(ids("QD CD JS Matto"))
    assert fool_payment(pile, empty_only=True) == -1  # no empty card: deferred (M-5)
    assert NAMES[fool_payment(pile, empty_only=False)] == "JS"  # the lowest value then


@pytest.mark.parametrize("mdc", [True, False])
@pytest.mark.parametrize("empty_only", [True, False])
def test_decision_1_fool_payment_is_the_least_combination_loss_then_exchange_rank(mdc, empty_only):
    from tarot_env.rules.millone import EXCHANGE_RANK

    rng = np.random.default_rng(11)
    piles = rng.random((300, N)) < rng.uniform(0.05, 0.6, (300, 1))  # sparse piles: few free pips
    piles[:, MATTO] = True
    got = np.array([fool_payment(pile, empty_only=empty_only, moors_double_count=mdc) for pile in piles])
    for pile, card in zip(piles, got.tolist()):
        cand = [c for c in np.flatnonzero(pile) if c != MATTO]
        low = 1 if empty_only else min((VALUE[c] for c in cand), default=1)
        cand = [c for c in cand if VALUE[c] == low]
        if not cand:
            assert card == -1
            continue
        base = combo_points(pile, moors_double_count=mdc)

        def loss(c, pile=pile, base=base):
            p = pile.copy()
            p[c] = False
            return base - combo_points(p, moors_double_count=mdc)

        assert card == min(cand, key=lambda c: (loss(c), EXCHANGE_RANK[c]))
    assert (got >= 0).any() and (not empty_only or (got == -1).any())


def surrender_deck(dealer: int = 0, dealer_coin: str | None = None):
    """``(deck, non-dealer's discards, dealer's discards)``: the non-dealer holds the Matto and 19
    suit cards, the dealer 20 trumps, so the non-dealer can win no trick. Discards: the non-dealer
    10 suit cards (with empty ones), the dealer T5 + 11.

    ``dealer_coin`` (a coins card of the non-dealer's discards) goes to the dealer's play instead of
    the T6, which the non-dealer discards in its place: the non-dealer's King of coins can then win
    the trick in which the dealer leads that card."""
    trumps = [c for c in range(N) if P.suit[c] == 4]
    suits = [c for c in range(N) if P.suit[c] < 4]
    non_king = [c for c in suits if P.names[c][0] != "K"]
    kings = [c for c in suits if P.names[c][0] == "K"]
    t5 = P.parse("T5")
    d_play = [c for c in trumps if c != t5]  # 20 trumps
    nd_discards = non_king[:10]
    d_discards = [t5] + non_king[10:21]
    nd_play = [MATTO] + kings + non_king[21:]  # 1 + 4 + 15 = 20
    if dealer_coin is not None:
        x, t6 = P.parse(dealer_coin), P.parse("T6")
        nd_discards[nd_discards.index(x)] = t6
        d_play.remove(t6)
        d_play.append(x)
    assert len(nd_play) == 20 and len(d_discards) == 12
    # first phase: the non-dealer's first 20 include his 10 discards; the dealer's 22 his first 10
    nd_first = nd_discards + nd_play[:10]
    nd_second = nd_play[10:]
    d_first = d_discards[:10] + d_play[:12]
    d_second = d_play[12:] + d_discards[10:]
    return deck_for(dealer, nd_first + nd_second, d_first + d_second), nd_discards, d_discards


def surrender_setup(dealer: int = 0, dealer_coin: str | None = None):
    """The game of :func:`surrender_deck` after the discards, at the first lead."""
    deck, nd_discards, d_discards = surrender_deck(dealer, dealer_coin)
    g = game_with_deck(dealer, deck)
    for c in nd_discards:
        g.apply(c)
    for c in d_discards[:10]:
        g.apply(c)
    for c in d_discards[10:]:
        g.apply(c)
    assert g.phase == Phase.PLAY
    return g, nd_discards, d_discards


def play_first_legal_but(g: MilloneGame, keep: dict[int, int]) -> int:
    """One card: the first legal card of the player to act, keeping ``keep[seat]`` while he can."""
    legal = [int(c) for c in np.flatnonzero(g.legal_mask())]
    other = [c for c in legal if c != keep.get(g.current)]
    g.apply(other[0] if other else legal[0])
    return other[0] if other else legal[0]


def matto_script(dealer: int, dealer_coin: str | None):
    """``(deck, actions, the hand's record)`` of a scripted hand on :func:`surrender_deck`: the
    discards, the non-dealer leads the Matto, then each plays his first legal card, keeping the KD
    (non-dealer) and ``dealer_coin`` (dealer) for the last trick. Without ``dealer_coin`` the Matto
    is surrendered; with the 7D the non-dealer wins it in the last trick and pays it at once (from his
    won cards); with the QD he wins no empty card and pays at the end of the hand, from his discards."""
    deck, nd_discards, d_discards = surrender_deck(dealer, dealer_coin)
    g = game_with_deck(dealer, deck)
    actions = [*nd_discards, *d_discards, MATTO]
    for c in actions:
        g.apply(c)
    keep = {1 - dealer: P.parse("KD")}
    if dealer_coin is not None:
        keep[dealer] = P.parse(dealer_coin)
    while not g.history:
        actions.append(play_first_legal_but(g, keep))
    assert len(actions) == 62
    return deck, actions, g.history[0]


@pytest.mark.parametrize("dealer", [0, 1])
def test_MIL_4_3_M_5_scripted_hands_surrender_last_trick_payment_end_of_hand_payment(dealer):
    nd = 1 - dealer
    _, _, h = matto_script(dealer, None)
    assert h["matto"] == {"owner": nd, "paid": None, "deferred": True, "surrendered": True}
    _, _, h = matto_script(dealer, "7D")
    assert h["matto"] == {"owner": nd, "paid": "7D", "deferred": False, "surrendered": False}
    assert h["tricks"][-1][1] == nd and h["tricks_won"][nd] == 1
    _, _, h = matto_script(dealer, "QD")
    assert h["matto"] == {"owner": nd, "paid": "10D", "deferred": True, "surrendered": False}


def test_MIL_4_4_B_4_6_the_matto_is_surrendered_if_its_player_wins_no_trick_and_the_debt_is_cancelled():
    g, nd_discards, d_discards = surrender_setup(0)
    nd, d = 1, 0
    g.apply(MATTO)  # the non-dealer leads the Matto
    g.apply(int(np.flatnonzero(g.legal_mask())[0]))
    # MIL-4.3 / M-5: he has won no card, so he owes it (public); his discards stay hidden
    assert g.exchange_card == -1 and g.exchange_owed == nd and not g.exchanged.any()
    assert (g.discards[nd] == P.mask(nd_discards)).all()
    for seat in (nd, d):
        o = g.observation(seat)
        assert o[OBS.exchange_owed][(nd - seat) % 2] == 1 and not o[OBS.exchanged].any()
    while not g.game_over and len(g.history) == 0:
        g.apply(int(np.flatnonzero(g.legal_mask())[0]))
    h = g.history[0]
    assert h["tricks_won"] == [20, 0]
    assert h["matto"] == {"owner": nd, "paid": None, "deferred": True, "surrendered": True}
    # the pile of the trickless player is exactly his discards (MIL-4.5: they still count for him)
    assert h["pile_sizes"] == [52, 10]
    nd_pile = P.mask(nd_discards)
    assert h["card_points"][nd] == card_points(nd_pile)
    assert h["scores"][nd] == card_points(nd_pile) + combo_points(nd_pile)
    assert h["card_points"] == [87 - card_points(nd_pile), card_points(nd_pile)]


def test_MIL_4_3_M_5_an_owed_payment_is_made_at_the_end_of_the_trick_that_brings_an_empty_card():
    g, nd_discards, _ = surrender_setup(0, dealer_coin="7D")
    nd, d = 1, 0
    kd, x = P.parse("KD"), P.parse("7D")
    g.apply(MATTO)  # trick 1: the Matto, lost; nothing won yet: owed
    play_first_legal_but(g, {d: x})
    assert g.exchange_owed == nd and g.exchange_card == -1
    g.apply(x)  # trick 2: the dealer leads the 7D, the non-dealer takes it with his King
    g.apply(kd)
    assert g.tricks[-1][1] == nd
    # paid at once with the empty card just won (the only one): public, from the won cards
    assert g.exchange_card == x and g.exchange_owed == -1 and not g.exchange_from_discards
    assert g.won[d, x] and not g.won[nd, x] and g.won[nd, kd] and g.won[nd, MATTO]
    assert (g.discards[nd] == P.mask(nd_discards)).all()
    for seat in (nd, d):
        o = g.observation(seat)
        assert o[OBS.exchanged][x] == 1 and not o[OBS.exchange_owed].any()
        assert o[OBS.won].reshape(2, N)[(d - seat) % 2, x] == 1
    while not g.history:
        play_first_legal_but(g, {})
    assert g.history[0]["matto"] == {"owner": nd, "paid": "7D", "deferred": False, "surrendered": False}


def test_MIL_4_3_M_5_still_owed_at_the_end_of_the_hand_the_lowest_card_of_the_whole_pile():
    # the non-dealer wins only the last trick, KD over QD: no empty card won, so the payment is made
    # at the end of the hand from his whole pile, discards included (decision 3)
    g, nd_discards, _ = surrender_setup(0, dealer_coin="QD")
    nd, d = 1, 0
    kd, qd = P.parse("KD"), P.parse("QD")
    g.apply(MATTO)
    while len(g.tricks) < 19:
        play_first_legal_but(g, {nd: kd, d: qd})
        assert g.exchange_owed == nd and g.exchange_card == -1  # owed all along, public
    assert g.current == d and g.hands[d, qd] and g.hands[nd, kd]
    g.apply(qd)
    g.apply(kd)
    h = g.history[0]
    assert h["tricks_won"] == [19, 1]
    m = h["matto"]
    assert m["owner"] == nd and m["deferred"] and not m["surrendered"]
    paid = P.parse(m["paid"])
    # his pile: the Matto, KD, QD and his 10 discards; of the empty cards (value 1) the pips cost no
    # combination points and come first in EXCHANGE_RANK: the 10 of coins
    assert paid in nd_discards and VALUE[paid] == 1 and m["paid"] == "10D"
    piles = piles_from_history(h)
    assert piles[d, paid] and not piles[nd, paid] and piles[nd, MATTO]
    assert h["pile_sizes"] == [int(p.sum()) for p in piles] == [2 * 19 - 1 + 12 + 1, 3 + 10 - 1]


def piles_from_history(h) -> np.ndarray:
    """Both final piles rebuilt from a hand's record: tricks, discards, then the Matto's moves."""
    piles = np.zeros((2, N), dtype=bool)
    for trick, w in h["tricks"]:
        for _, c in trick:
            piles[w, c] = True
    for p in (0, 1):
        piles[p, h["discards"][p]] = True
    m = h["matto"]
    if m["owner"] >= 0:
        o = m["owner"]
        piles[:, MATTO] = False
        piles[1 - o if m["surrendered"] else o, MATTO] = True
        if m["paid"]:
            c = P.parse(m["paid"])
            piles[o, c], piles[1 - o, c] = False, True
    return piles


# --- scoring (MIL-5, D.7) ---------------------------------------------------------------------------

D7_N_COMBO_CARDS = "Angel World Sun Moon T16 T15 Matto KC QC CC"
D7_N_OTHER = "KB QD CS JD JS 6D 7D 8D 9D 10D 6C 7C 8C 9C 10C 6S 7S 8S 9S 10S 10B 9B"


def test_D_7_worked_example():
    n_pile = P.mask(ids(D7_N_COMBO_CARDS + " " + D7_N_OTHER))
    d_pile = ~n_pile
    assert n_pile.sum() == 32 and d_pile.sum() == 30  # 11 tricks + 10 discards; 9 tricks + 12
    assert VALUE[n_pile].sum() == 64 and VALUE[d_pile].sum() == 54
    b = combo_breakdown(n_pile)
    assert {(s.family, s.points) for s in b.sequences} == {("Grande", 30), ("Cups", 15)}
    assert [(c.family, c.points) for c in b.cricche] == [("Tarocchi", 18)]
    assert b.total == 63
    # seat 0 = N (non-dealer), seat 1 = D who won the last trick: the engine's count (D.5) of these piles
    r = MilloneRows(1, MilloneConfig())
    r.won_bits[0] = pack_bits(np.stack([n_pile, d_pile]))
    r.excuse_owner[0], r.log_winner[0, -1] = -1, 1  # no Matto to settle
    f = {k: v[0].tolist() for k, v in r.score_hands(np.array([0])).items()}
    cp, combos, scores = f["card_points"], f["combos"], f["scores"]
    assert cp == [48, 39] and sum(cp) == 87
    assert combos[0] == 63 and scores[0] == 111
    assert scores[1] == 39 + 6 + combo_points(d_pile)


def _v2(o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An observation's v2 sections in points: pile_combos [2], combo_gain [2, 62]."""
    return o[OBS.pile_combos] * COMBO_SCALE, o[OBS.combo_gain].reshape(2, N) * COMBO_SCALE


def test_D_7_v2_pile_combos_and_combo_gain_value_the_worked_example_pile():
    """MIL-5 / D.7: N's pile holds the example's combination cards (63 points: Grande 30, Cups 15,
    Tarocchi 18); the v2 sections show those 63 to N and what each card would add."""
    rng = np.random.default_rng(3)
    g = MilloneGame(seed=3)
    while g.phase != Phase.PLAY:
        random_step(g, rng)
    won_n = P.mask(ids("Angel World Sun Moon T16 T15 Matto KC QC CC"))
    disc_n = P.mask(ids("6D 7D"))  # N's discards count in his pile (MIL-2.4)
    won_d = P.mask(ids("KD KS T14 8B"))
    disc_d = P.mask(ids("KB QB CB"))  # D's hidden discards: a cricca N cannot see
    # the piles written into the game's row (its card sets: won cards and discards per seat)
    g.row.won_bits[0] = pack_bits(np.stack([won_n, won_d]))
    g.row.disc_bits[0] = pack_bits(np.stack([disc_n, disc_d]))
    assert (g.won == np.stack([won_n, won_d])).all() and (g.discards == np.stack([disc_n, disc_d])).all()
    mine, theirs = won_n | disc_n, won_d
    assert combo_points(mine) == 63  # D.7
    points, gain = _v2(g.observation(0))
    assert np.allclose(points, [63, combo_points(theirs)])
    for card in ("JC", "T13", "KB", "6S", "T14", "KC"):
        c = ids(card)[0]
        x = np.zeros(N, dtype=bool)
        x[c] = True
        taken = (mine | theirs)[c]
        want = [0, 0] if taken else [combo_points(mine | x) - 63, combo_points(theirs | x) - combo_points(theirs)]
        assert np.allclose(gain[:, c], want), card
    assert gain[0, ids("JC")[0]] > 0 and gain[0, ids("T13")[0]] > 0  # they extend Cups and the Grande
    assert gain[1, ids("KB")[0]] > 0  # a third King would be a cricca for D
    assert (gain[:, ids("6S")[0]] == 0).all()  # a plain pip belongs to no combination
    # D sees N's won cards only (N's discards are hidden, H.4), and his own whole pile with its discards
    points_d, gain_d = _v2(g.observation(1))
    assert np.allclose(points_d, [combo_points(theirs | g.discards[1]), combo_points(won_n)])
    assert (gain_d[:, P.mask(ids("KB QB CB"))] == 0).all()  # in D's pile: nothing to win


def test_v2_combo_features_are_combo_points_differences_in_random_games():
    """Over random games, for both seats at every decision: pile_combos = combo_points of the seat's
    pile (won + own discards, MIL-2.4) and of the opponent's won cards; combo_gain[i, c] = what card c
    adds to that set (0 for a card in either); all within the space's bounds."""
    rng = np.random.default_rng(8)
    checked = 0
    for seed in range(3):
        g = MilloneGame(seed=seed)
        while not g.game_over and g.hands_played < 2:
            seat = int(rng.integers(2))
            o = g.observation(seat)
            points, gain = _v2(o)
            mine, theirs = g.won[seat] | g.discards[seat], g.won[1 - seat]
            assert np.allclose(points, [combo_points(mine), combo_points(theirs)])
            assert (gain[:, mine | theirs] == 0).all() and (gain >= 0).all()
            assert (o[OBS.combo_gain] <= MilloneGame.OBS_HIGH["combo_gain"]).all()
            for c in rng.choice(np.flatnonzero(~(mine | theirs)), size=min(3, int((~(mine | theirs)).sum())),
                                replace=False) if (~(mine | theirs)).any() else []:
                x = np.zeros(N, dtype=bool)
                x[c] = True
                assert np.isclose(gain[0, c], combo_points(mine | x) - combo_points(mine), rtol=0, atol=1e-4)
                assert np.isclose(gain[1, c], combo_points(theirs | x) - combo_points(theirs), rtol=0, atol=1e-4)
                checked += 1
            random_step(g, rng)
    assert checked > 500


def test_MIL_5_1_B_3_5_hand_score_is_card_points_plus_last_trick_plus_pile_combinations():
    rng = np.random.default_rng(11)
    g = MilloneGame(seed=11)
    while not g.history:
        random_step(g, rng)
    h = g.history[0]
    piles = piles_from_history(h)
    for p in (0, 1):
        expect = card_points(piles[p]) + combo_points(piles[p]) + 6 * (h["last_trick"] == p)
        assert h["scores"][p] == expect
    assert g.scores.tolist() == h["scores"] or g.history[-1].get("claim")


# --- game end (MIL-6) -------------------------------------------------------------------------------

def test_MIL_6_1_first_to_1000_both_the_higher_equal_plays_on_and_the_cap():
    assert game_results([1000, 400], 3, 100) == 0
    assert game_results([999, 1012], 3, 100) == 1
    assert game_results([1100, 1050], 3, 100) == 0  # both: the higher
    assert game_results([1050, 1050], 3, 100) == PLAY_ON  # M-7: equal: another hand
    assert game_results([500, 400], 3, 100) == PLAY_ON
    assert game_results([1050, 1050], 100, 100) == -1  # a draw at the cap
    assert game_results([500, 700], 100, 100) == -1  # decision 6: undecided at the cap: a draw
    assert game_results([1000, 700], 100, 100) == 0  # a decided last hand still wins


def test_MIL_6_1_game_ends_when_a_hand_brings_a_player_to_1000():
    rng = np.random.default_rng(5)
    g = MilloneGame(seed=5)
    g.scores[:] = [TARGET - 1, 0]
    while not g.history:
        random_step(g, rng)
    h = g.history[0]
    assert h["scores"][0] >= 5  # a pile holds >= 10 cards worth >= 1 each: >= 5 card points (B.3.2)
    assert g.game_over and g.winner == 0 and g.phase == Phase.GAME_OVER


def test_max_hands_cap_ends_the_game():
    rng = np.random.default_rng(1)
    g = MilloneGame(MilloneConfig(max_hands=1), seed=1)
    while not g.game_over:
        random_step(g, rng)
    assert g.hands_played == 1 and len(g.history) == 1
    assert g.winner == -1 and g.truncated and g.phase == Phase.GAME_OVER


# --- invariants over many seeded random games ------------------------------------------------------

@pytest.mark.slow
def test_invariants_over_1000_random_games():
    """62 cards accounted for; card points 87 (93 with the last trick); 10 + 12 discards; 20 tricks;
    scores add up; a hand's piles partition the pack."""
    hands = claims = surrenders = deferred = 0
    for seed in range(1000):
        g = MilloneGame(seed=seed)
        rng = np.random.default_rng(seed)
        total = np.zeros(2, dtype=np.int64)
        while not g.game_over:
            if g.phase == Phase.PLAY and not g.trick and not g.tricks:
                assert g.hand_sizes == [20, 20] and g.hands.sum() == 40
                assert sorted(g.discards.sum(axis=1).tolist()) == [10, 12]
                assert g.discards[g.dealer].sum() == 12 and not g.stock.any()
            before = len(g.history)
            random_step(g, rng)
            for h in g.history[before:]:
                total += h["scores"]
                if h.get("claim"):
                    claims += 1
                    continue
                hands += 1
                assert len(h["tricks"]) == 20 and sum(h["tricks_won"]) == 20
                assert [len(d) for d in h["discards"]] == ([10, 12] if h["dealer"] == 1 else [12, 10])
                cards = [c for t, _ in h["tricks"] for _, c in t] + h["discards"][0] + h["discards"][1]
                assert sorted(cards) == list(range(N))  # every card played or discarded once
                assert sum(h["card_points"]) == 87
                assert sum(h["card_points"]) + 6 == 93 == sum(h["scores"]) - sum(h["combos"])
                assert sum(h["pile_sizes"]) == 62 and all(s % 2 == 0 for s in h["pile_sizes"])
                assert all(c >= 0 for c in h["combos"])
                surrenders += h["matto"]["surrendered"]
                deferred += h["matto"]["deferred"]
        assert g.scores.tolist() == total.tolist()
        assert g.winner in (0, 1) and not g.truncated  # random games end long before the cap
        assert g.scores[g.winner] == max(g.scores) and max(g.scores) >= 1000
    assert hands > 3000 and claims > 0


# --- determinism, clone, serialisation ---------------------------------------------------------------

def test_one_seed_reproduces_the_game_and_json_round_trip_continues_identically():
    rng = np.random.default_rng(0)
    for seed in range(10):
        g = MilloneGame(seed=seed)
        for _ in range(int(rng.integers(1, 150))):
            random_step(g, rng)
        h = MilloneGame.from_dict(json.loads(json.dumps(g.to_dict())))
        c = g.clone()
        while not g.game_over:
            for other in (h, c):
                assert np.array_equal(other.legal_mask(), g.legal_mask())
                for s in (0, 1):
                    assert np.array_equal(other.observation(s), g.observation(s))
                assert np.array_equal(other.state_vector(), g.state_vector())
            a = int(np.flatnonzero(g.legal_mask())[0])
            for x in (g, h, c):
                x.apply(a)
        assert h.history == g.history == c.history and h.winner == g.winner
        assert np.array_equal(h.next_game().hands, g.next_game().hands)
    a, b = MilloneGame(seed=3), MilloneGame(seed=3)
    assert np.array_equal(a.deck, b.deck)


# --- hidden information (H.4, H.6) ----------------------------------------------------------------

def redeal_unseen(g: MilloneGame, observer: int, rng) -> MilloneGame:
    """A copy where every card ``observer`` cannot know is dealt again among the places it cannot
    see (the opponent's hand, his discards, the stock), keeping how many each place holds."""
    h = g.clone()
    hidden = g.hidden_from(observer)
    opp = 1 - observer
    cards = np.concatenate([np.flatnonzero(hidden[k]) for k in ("hand", "discards", "stock")])
    sizes = [int(hidden[k].sum()) for k in ("hand", "discards", "stock")]
    perm = rng.permutation(cards)
    hands, discards, stock = h.hands.copy(), h.discards.copy(), np.zeros(N, dtype=bool)
    hands[opp] = False
    discards[opp] = False
    hands[opp, perm[:sizes[0]]] = True
    discards[opp, perm[sizes[0]:sizes[0] + sizes[1]]] = True
    stock_cards = perm[sizes[0] + sizes[1]:]
    stock[stock_cards] = True
    order = perm[sizes[0]:sizes[0] + sizes[1]].tolist()  # the opponent's discards, in some order
    h.place_cards(hands, discards, stock, discarded=[order if p == opp else None for p in range(2)])
    h.deck[h.stock_pos:] = stock_cards
    return h


def test_H_6_leak_test_observation_unchanged_when_unseen_cards_are_redealt():
    rng = np.random.default_rng(1)
    changed = 0
    for seed in range(40):
        g = MilloneGame(seed=seed)
        while not g.game_over:
            if rng.random() < 0.1:
                for observer in (0, 1):
                    h = redeal_unseen(g, observer, rng)
                    assert np.array_equal(h.observation(observer), g.observation(observer)), (seed, observer)
                    if observer == g.current:
                        assert np.array_equal(h.legal_mask(), g.legal_mask())
                    changed += not np.array_equal(h.state_vector(), g.state_vector())
            random_step(g, rng)
    assert changed > 100  # the re-deal really moved hidden cards


def test_H_4_discards_and_stock_stay_hidden_from_the_opponent():
    rng = np.random.default_rng(2)
    g = MilloneGame(seed=2)
    while g.phase != Phase.PLAY:
        random_step(g, rng)
    for seat in (0, 1):
        o = g.observation(seat)
        opp_discards = g.discards[1 - seat]
        visible = np.zeros(N, dtype=bool)
        for name in ("hand", "my_discards", "played", "trick", "won", "exchanged", "claim_shown"):
            visible |= (o[OBS.offsets[name]].reshape(-1, N) > 0).any(axis=0)
        assert not visible[opp_discards].any()
        assert np.array_equal(o[OBS.my_discards] > 0, g.discards[seat])
    # the stock is seen by no one before it is dealt
    g = MilloneGame(seed=4)
    for seat in (0, 1):
        o = g.observation(seat)
        assert not (o[:OBS.seat_from_dealer.start].reshape(-1, N) > 0)[:, g.stock].any()
        assert o[OBS.stock_size][0] == 1.0
    assert g.state_vector()[STATE.stock].sum() == 20 and STATE_SIZE == 898


def test_observation_scalars_are_in_range_and_the_size_is_the_documented_sum():
    assert OBS.size == 62 * 11 + 18 + 10 + 2 + 2 * 62 == 836
    rng = np.random.default_rng(6)
    g = MilloneGame(seed=6)
    while not g.game_over:
        o = g.observation(g.current)
        unit = np.ones(OBS.size, dtype=bool)  # the sections in [0, 1]
        unit[OBS.scores] = False
        for name, bound in MilloneGame.OBS_HIGH.items():  # the v2 combination values: B.5 points / 100
            unit[getattr(OBS, name)] = False
            assert (o[getattr(OBS, name)] >= 0).all() and (o[getattr(OBS, name)] <= bound).all()
        assert (o[unit] >= 0).all() and (o[unit] <= 1).all()
        assert o[OBS.phase].sum() == 1 and o[OBS.phase][int(g.phase)] == 1
        random_step(g, rng)


def test_signal_ids_are_never_legal_and_keep_the_engine_names():
    assert MilloneGame.num_actions == 65
    assert MilloneGame.action_name(62) == "signal:VOID" and MilloneGame.action_name(21) == "Matto"
    g = MilloneGame(seed=0)
    with pytest.raises(ValueError, match="illegal action 62"):
        g.apply(62)
    with pytest.raises(ValueError, match="out of range"):
        g.apply(65)


# --- a golden hand: an explicit deck and the first-legal-card policy, checked by hand -------------

def test_golden_hand_identity_deck_first_legal_policy():
    """Deck = ids 0..61 in order, dealer 0; every decision takes the lowest legal id.

    Checked by hand: seat 1 (non-dealer) discards Sun Moon T16 T10 … T6 QD CD; seat 0 discards
    T15 … T11 T5 Moor1–4, then JD AD. Tricks: Angel/6D, World/7D, Begato/8D to seat 1; seat 1 leads
    the Matto, seat 0 takes it with JC and receives 8D (the first pip of decision 1's order among
    6D 7D 8D in seat 1's pile); AC/KC and KD/6C to seat 1. Seat 0's pile: 12 discards + JC + 8D =
    14 cards worth 16 → 16 − 7 = 9 card points, plus the four Moors (15); seat 1: 87 − 9 = 78,
    the last trick 6, and his combinations.
    """
    g = MilloneGame(MilloneConfig(max_hands=1), seed=0, first_dealer=0)
    g.set_deck(0, np.arange(N))
    while not g.game_over:
        g.apply(g.legal_actions()[0])
    h = g.history[0]
    assert [P.names_of(d) for d in h["discards"]] == [
        "T15 T14 T13 T12 T11 T5 Moor1 Moor2 Moor3 Moor4 JD AD".split(),
        "Sun Moon T16 T10 T9 T8 T7 T6 QD CD".split(),
    ]
    first = [(" ".join(NAMES[c] for _, c in t), w) for t, w in h["tricks"][:6]]
    assert first == [("Angel 6D", 1), ("World 7D", 1), ("Begato 8D", 1), ("Matto JC", 0),
                     ("AC KC", 1), ("KD 6C", 1)]
    assert h["matto"] == {"owner": 1, "paid": "8D", "deferred": False, "surrendered": False}
    assert h["tricks_won"] == [1, 19] and h["pile_sizes"] == [14, 48] and h["last_trick"] == 1
    assert h["card_points"] == [9, 78] and h["combos"][0] == 15
    assert h["scores"] == [24, 78 + 6 + h["combos"][1]]
    assert h["combos"][1] == 558  # regression pin (combo_points of seat 1's 48-card pile)
    assert g.winner == -1 and g.truncated and g.scores.tolist() == h["scores"]  # max_hands=1
