"""RULES.md Part B clauses shared by Ottocento and Millone, and Millone clauses not cited elsewhere."""
from __future__ import annotations

import numpy as np
import pytest

from tarot_env.cards import BOLOGNESE as P, EXCUSE, TRUMP
from tarot_env.engine import trick_winner
from tarot_env.rules.combos import combo_points
from tarot_env.rules.millone import MilloneGame, Phase as MPhase, pack_bits
from tarot_env.rules.ottocento import team_hand_score

N = P.size


def names(suit: int) -> list[str]:
    return [P.names[c] for c in range(N) if P.suit[c] == suit]


def test_B_1_1_four_suits_of_ten_without_the_2_to_5():
    for s, letter in enumerate("DCSB"):
        ranks = {n[:-1] for n in names(s)}
        assert ranks == {"K", "Q", "C", "J", "A", "6", "7", "8", "9", "10"}
        assert all(n.endswith(letter) for n in names(s))


def test_B_1_2_twenty_one_trumps_highest_first():
    t = names(TRUMP)
    assert t == ["Angel", "World", "Sun", "Moon"] + [f"T{k}" for k in range(16, 4, -1)] + \
        ["Moor1", "Moor2", "Moor3", "Moor4", "Begato"]
    strength = [int(P.strength[P.parse(n)]) for n in t]
    assert strength == sorted(strength, reverse=True)
    assert P.strength[P.parse("Angel")] == 20 and P.strength[P.parse("Begato")] == 0


def test_B_1_3_the_matto_is_neither_suit_nor_trump_and_62_cards():
    assert P.suit[P.parse("Matto")] == EXCUSE and P.excuse == P.parse("Matto")
    assert P.size == 62 == 40 + 21 + 1


def test_B_2_1_any_trump_beats_every_suit_card():
    for trump in ("Begato", "Moor1", "T5"):
        trick = [(0, P.parse("KD")), (1, P.parse(trump)), (2, P.parse("QD")), (3, P.parse("KS"))]
        assert trick_winner(P, trick) == 1


def test_B_2_3_round_suits_inverted_pips_long_suits_normal():
    def w(cards):
        return trick_winner(P, [(i, P.parse(c)) for i, c in enumerate(cards.split())])
    assert w("10D 9D 6D AD") == 3   # coins: the Ace is the best pip, the 10 the worst
    assert w("6C 10C 7C JC") == 3   # cups: the Jack beats every pip
    assert w("AS 6S 10S 9S") == 2   # swords: 10 high, Ace low
    assert w("AB 7B 6B 8B") == 3


def test_B_2_4_the_matto_never_wins_and_a_matto_lead_lets_the_next_card_fix_the_suit():
    trick = [(0, P.parse("Matto")), (1, P.parse("8S")), (2, P.parse("KD")), (3, P.parse("7S"))]
    assert trick_winner(P, trick) == 1   # swords fixed by 8S (B.4.3); the King of coins is off-suit
    two = [(0, P.parse("Matto")), (1, P.parse("6B"))]  # Millone's two-card trick
    assert trick_winner(P, two) == 1


def test_B_3_1_card_values():
    v = {P.names[c]: int(P.value[c]) for c in range(N)}
    for five in ("Angel", "World", "Begato", "Matto", "KD", "KC", "KS", "KB"):
        assert v[five] == 5
    assert v["QS"] == 4 and v["CB"] == 3 and v["JD"] == 2
    assert v["Sun"] == v["Moon"] == v["T16"] == v["Moor3"] == v["AC"] == v["6D"] == 1
    assert sum(v.values()) == 118  # B.3.3


def test_B_3_4_pile_sizes_are_even_in_random_millone_hands():
    rng = np.random.default_rng(0)
    for seed in range(40):
        g = MilloneGame(seed=seed)
        while not g.game_over and g.hands_played == 0:
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
        h = g.history[0]
        if h.get("claim"):
            continue
        assert all(size % 2 == 0 for size in h["pile_sizes"]) and sum(h["pile_sizes"]) == 62


def test_B_3_5_last_trick_is_worth_6():
    pile = P.mask("KD 6D 7D 8D".split())
    assert team_hand_score(pile, last_trick=True) - team_hand_score(pile, last_trick=False) == 6


def test_B_4_2_no_obligation_to_beat_or_to_overtrump():
    g = MilloneGame(seed=0)
    r = g.row  # the game's row: the card led (lead, lead_seat) and the hands as card sets

    def lead_and_hand(led: str, hand: str) -> None:
        r.lead[0], r.lead_seat[0] = P.parse(led), 0
        r.hand_bits[0, 1] = pack_bits(P.mask(hand.split()))

    lead_and_hand("T10", "T16 T5 KD")
    assert g.trick == [(0, P.parse("T10"))]
    assert set(P.names_of(g.legal_cards(1))) == {"T16", "T5"}  # a lower trump is legal
    lead_and_hand("10S", "AS T5")
    assert set(P.names_of(g.legal_cards(1))) == {"AS"}  # follow, even with a card that cannot win


def test_B_5_7_no_bonus_for_many_trumps_or_empty_cards():
    # Pisarri's "Onori"/"Oche" for 10+ trumps or 10+ cartacce are not scored: only B.5 combinations
    trumps = P.parse_many("T16 T15 T14 T13 T12 T11 T10 T9 T8 T7")  # no Angel: no Grande
    assert combo_points(trumps) == 0
    pips = P.parse_many("6D 7D 8D 9D 10D 6C 7C 8C 9C 10C")
    assert combo_points(pips) == 0


# --- Millone (Part D) clauses ---------------------------------------------------------------------

def test_MIL_1_1_millone_uses_the_bolognese_pack_ranks_and_values():
    g = MilloneGame(seed=0)
    assert g.pack.size == 62 and g.pack.names == P.names
    assert np.array_equal(g.pack.value, P.value)


def test_MIL_1_2_honours_are_the_tarocchi_and_empty_cards_are_worth_one():
    g = MilloneGame(seed=3)
    hand = g.hands[g.current]
    mask = g.legal_mask()[:N]
    for honour in ("Angel", "World", "Begato", "Matto"):
        assert not mask[P.parse(honour)]  # never discardable (MIL-2.4)
    assert mask[hand & (P.value == 1)].all() or not (hand & (P.value == 1)).any()


def test_MIL_2_3_the_claim_check_comes_on_the_first_20_and_22_cards_before_any_discard():
    # (claims themselves: tests/test_millone.py, MIL-3.2 / 3.3)
    for seed in range(30):
        g = MilloneGame(seed=seed)
        assert g.phase == MPhase.DISCARD and not g.discards.any() and not g.history
        assert sorted(g.hand_sizes) == [20, 22]


def test_MIL_2_7_card_arithmetic_20_plus_22_plus_20_stock():
    g = MilloneGame(seed=1)
    assert int(g.hands.sum()) + int(g.stock.sum()) == 62 and int(g.stock.sum()) == 20


def test_MIL_3_4_no_declarations_in_hand_only_cards_are_ever_legal():
    rng = np.random.default_rng(2)
    for seed in range(10):
        g = MilloneGame(seed=seed)
        while not g.game_over:
            mask = g.legal_mask()
            assert not mask[N:].any()  # no declaration or signal action exists in Millone
            legal = np.flatnonzero(mask)
            g.apply(int(legal[rng.integers(len(legal))]))


def test_MIL_6_2_scores_carry_from_hand_to_hand_with_no_stake():
    rng = np.random.default_rng(4)
    g = MilloneGame(seed=4)
    while not g.game_over:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    assert g.scores.tolist() == [sum(h["scores"][p] for h in g.history) for p in range(2)]


@pytest.mark.parametrize("seed", range(3))
def test_MIL_5_1_pile_combinations_equal_combo_points_of_each_pile(seed):
    rng = np.random.default_rng(seed)
    g = MilloneGame(seed=seed)
    while not g.game_over and g.hands_played == 0:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    h = g.history[0]
    if not h.get("claim"):
        assert h["combos"] == [combo_points(_final_pile(g, h, p)) for p in range(2)]


def _final_pile(g, h, p):
    """The pile of player p at the end of hand ``h``, rebuilt from its tricks, discards and Matto exchange."""
    pile = np.zeros(N, dtype=bool)
    for trick, w in h["tricks"]:
        for _, c in trick:
            pile[c] = w == p
    for c in h["discards"][p]:
        pile[c] = True
    m = h.get("matto") or {}
    owner = next((s for t, _ in h["tricks"] for s, c in t if c == P.excuse), None)
    if owner is not None:
        if m.get("surrendered"):
            pile[P.excuse] = p != owner
        else:
            pile[P.excuse] = p == owner
            paid = m.get("paid")
            if paid is not None:
                pile[P.parse(paid)] = p != owner
    return pile
