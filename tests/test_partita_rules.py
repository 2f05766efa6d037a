"""Partita rules (RULES.md Part E): one test (at least) per PAR clause, named after it."""
from __future__ import annotations

import numpy as np
import pytest

from tarot_env.cards import FRENCH54, TRUMP
from tarot_env.engine import trick_winner
from tarot_env.rules.partita import (
    FOOL,
    N,
    PartitaConfig,
    PartitaGame,
    Phase,
    deal_points,
)

P = FRENCH54


def ids(names: str) -> list[int]:
    return P.parse_many(names)


def game_with_hands(hands: dict[int, str], dealer: int = 0, **cfg) -> PartitaGame:
    """A game whose first deal is the given hands (names); unnamed cards fill the other hands."""
    g = PartitaGame(PartitaConfig(**cfg), seed=0, first_dealer=dealer)
    fixed = {s: ids(h) for s, h in hands.items()}
    rest = [c for c in range(N) if all(c not in v for v in fixed.values())]
    out = []
    for s in range(4):
        want = 15 if s == dealer else 13
        cards = fixed.get(s, [])
        cards = cards + [rest.pop(0) for _ in range(want - len(cards))]
        out.append(cards)
    g.set_hands(dealer, out)
    return g


def to_play(g: PartitaGame, discard: str | None = None) -> PartitaGame:
    """Make the dealer's discard (given or the first legal ones) to reach the PLAY phase."""
    for c in ids(discard) if discard else []:
        g.apply(c)
    while g.phase == Phase.DISCARD:
        g.apply(g.legal_actions()[0])
    return g


# --- E.1 the pack -------------------------------------------------------------------------------

def test_PAR_1_1_trumps_I_to_XXI_and_the_fool():
    trumps = [P.names[c] for c in range(N) if P.suit[c] == TRUMP]
    assert len(trumps) == 21 and trumps[0] == "XXI" and trumps[-1] == "I"
    assert P.names[P.excuse] == "Fool"


def test_PAR_1_2_spades_and_clubs_K_Q_C_V_10_to_7():
    for s, letter in ((0, "S"), (1, "C")):
        assert [P.names[c] for c in range(N) if P.suit[c] == s] == [
            r + letter for r in ("K", "Q", "C", "V", "10", "9", "8", "7")]


def test_PAR_1_3_diamonds_and_hearts_K_Q_C_V_A_to_4_and_54_cards():
    for s, letter in ((2, "D"), (3, "H")):
        assert [P.names[c] for c in range(N) if P.suit[c] == s] == [
            r + letter for r in ("K", "Q", "C", "V", "A", "2", "3", "4")]
    assert P.size == 54 == 21 + 1 + 32


def test_card_names_parse_and_print_back_exactly():
    for c in range(N):
        assert P.parse(P.name(c)) == c
    with pytest.raises(ValueError, match="unknown card name 'ZZ'"):
        P.parse("ZZ")


# --- E.2 card strength --------------------------------------------------------------------------

def winner(cards: str, leader: int = 0) -> int:
    trick = [((leader + i) % 4, c) for i, c in enumerate(ids(cards))]
    return trick_winner(P, trick)


def test_PAR_2_1_trumps_beat_suits_and_rank_XXI_down_to_VI():
    assert winner("KS 7S VI 10S") == 2
    assert winner("VI VII XXI XX") == 2
    assert winner("XX XXI VII 10S") == 1


def test_PAR_2_2_trumps_I_to_V_equal_the_last_played_wins():
    assert winner("I V 7S 8S") == 1       # V after I: equal, the later wins
    assert winner("V I KS QS") == 1       # I after V: equal, the later wins
    assert winner("II III IV V") == 3
    assert winner("V VI I KS") == 1       # VI beats the equal group


def test_PAR_2_3_suit_order_black_K_to_7_red_K_Q_C_V_A_2_3_4():
    assert winner("7S 10S 9S 8S") == 1
    assert winner("AH 4H 3H 2H") == 0     # the Ace is the best red pip, the 4 the worst
    assert winner("4D 3D 2D VD") == 3
    assert winner("KH QH CH VH") == 0


def test_PAR_2_4_the_fool_never_wins_and_a_fool_lead_lets_the_next_card_fix_the_suit():
    assert winner("Fool 7S 10S KC") == 2   # spades fixed by 7S; KC is off-suit
    assert winner("XXI Fool 7S 8S") == 0


# --- E.3 teams, game, dealer rotation -----------------------------------------------------------

def test_PAR_3_1_fixed_teams_partners_opposite_counter_clockwise():
    g = PartitaGame(seed=1)
    assert g.team_of == (0, 1, 0, 1)
    assert [g.next_seat(s) for s in range(4)] == [1, 2, 3, 0]
    assert [g.partner(s) for s in range(4)] == [2, 3, 0, 1]


def random_game(seed: int, **cfg) -> PartitaGame:
    g = PartitaGame(PartitaConfig(**cfg), seed=seed)
    rng = np.random.default_rng(seed)
    while not g.game_over:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    return g


def test_PAR_3_2_a_game_is_deals_per_game_deals_default_4():
    assert PartitaConfig().deals_per_game == 4
    assert len(random_game(3).history) == 4
    assert len(random_game(3, deals_per_game=2).history) == 2


def test_PAR_3_3_random_first_dealer_then_next_seat_and_next_game_partner_of_last_dealer():
    firsts = {PartitaGame(seed=s).dealer for s in range(40)}
    assert firsts == {0, 1, 2, 3}
    g = random_game(5)
    dealers = [h["dealer"] for h in g.history]
    assert dealers == [(dealers[0] + i) % 4 for i in range(4)]
    nxt = g.next_game()
    assert nxt.dealer == (dealers[-1] + 2) % 4


# --- E.4 deal and discard -----------------------------------------------------------------------

def test_PAR_4_1_thirteen_cards_each_and_fifteen_to_the_dealer():
    for seed in range(20):
        g = PartitaGame(seed=seed)
        sizes = g.hands.sum(axis=1)
        assert sizes[g.dealer] == 15 and sorted(sizes) == [13, 13, 13, 15]
        assert g.hands.sum(axis=0).tolist() == [1] * N
        assert g.hand_sizes == sizes.tolist()


def test_PAR_4_2_dealer_discards_two_into_his_team_pile():
    g = game_with_hands({1: "QS CS 9S QC CC 9C QD CD AD QH CH AH 7S"}, dealer=1)
    assert g.phase == Phase.DISCARD and g.current == 1
    g.apply(P.parse("9S"))
    assert g.phase == Phase.DISCARD and g.current == 1
    g.apply(P.parse("9C"))
    assert g.phase == Phase.PLAY
    assert P.names_of(g.discards[1]) == ["9S", "9C"]
    assert not g.hands[1, ids("9S 9C")].any() and g.hand_sizes[1] == 13


def test_PAR_4_2_discards_score_for_the_dealers_team():
    g = game_with_hands({0: "KS KC KD KH XXI I QS QC QD QH CS CC CD CH 7S"}, dealer=0)
    g.apply(P.parse("QS"))
    g.apply(P.parse("QC"))
    piles = g.team_piles()
    assert piles[0, P.parse("QS")] and piles[0, P.parse("QC")]
    assert not piles[1].any()


def test_PAR_4_3_never_kings_trump_I_trump_XXI_or_the_fool():
    g = game_with_hands({0: "KS KC KD KH XXI I Fool XX XIX QS QC 10S 9S 8S 7S"}, dealer=0)
    legal = set(P.names_of(g.legal_mask()[:N]))
    assert legal == {"QS", "QC", "10S", "9S", "8S", "7S"}
    for bad in ("KS", "XXI", "I", "Fool"):
        with pytest.raises(ValueError, match="illegal action"):
            g.apply(P.parse(bad))


def test_PAR_4_4_trumps_only_when_no_other_option_per_card_reading():
    # two or more plain cards: no trump may be discarded
    g = game_with_hands({0: "KS KC KD KH XXI I Fool XX XIX XVIII XVII XVI XV QS 7S"}, dealer=0)
    assert set(P.names_of(g.legal_mask()[:N])) == {"QS", "7S"}
    # exactly one plain card: that card plus one trump II-XX
    g = game_with_hands({0: "KS KC KD KH XXI I Fool XX XIX XVIII XVII XVI XV XIV 7S"}, dealer=0)
    assert set(P.names_of(g.legal_mask()[:N])) == {"7S", "XX", "XIX", "XVIII", "XVII", "XVI", "XV", "XIV"}
    g.apply(P.parse("XX"))
    assert P.names_of(g.legal_mask()[:N]) == ["7S"]
    # no plain card: two trumps
    g = game_with_hands({0: "KS KC KD KH XXI I Fool XX XIX XVIII XVII XVI XV XIV II"}, dealer=0)
    g.apply(P.parse("II"))
    assert "XX" in P.names_of(g.legal_mask()[:N])


def test_PAR_4_5_a_discarded_trump_is_announced_to_everyone():
    g = game_with_hands({0: "KS KC KD KH XXI I Fool XX XIX XVIII XVII XVI XV XIV 7S"}, dealer=0)
    g.apply(P.parse("7S"))
    g.apply(P.parse("XX"))
    assert P.names_of(g.public_discards) == ["XX"]
    from tarot_env.rules.partita import OBS
    for seat in range(4):
        obs = g.observation(seat)
        assert P.names_of(obs[OBS.public_discards] > 0) == ["XX"]
        assert obs[OBS.my_discards].sum() == (2 if seat == 0 else 0)


def test_PAR_4_6_a_legal_discard_always_exists():
    for seed in range(300):
        g = PartitaGame(seed=seed)
        assert g.legal_mask().sum() >= 1
        g.apply(g.legal_actions()[-1])
        assert g.legal_mask().sum() >= 1


# --- E.5 play ----------------------------------------------------------------------------------

def test_PAR_5_1_the_dealer_leads_the_first_trick_then_the_winner_leads():
    for seed in range(10):
        g = to_play(PartitaGame(seed=seed))
        assert g.current == g.leader == g.dealer
        for _ in range(4):
            g.apply(g.legal_actions()[0])
        w = g.tricks[-1][1]  # the current deal's finished tricks
        assert g.current == g.leader == w


def legal_after_lead(follower: str) -> set[str]:
    """The cards seat 1 (holding the 13 cards ``follower``) may play after the dealer, seat 0, leads KS."""
    g = game_with_hands({0: "KS 10C 9C", 1: follower}, dealer=0)
    to_play(g, discard="10C 9C")
    g.apply(P.parse("KS"))
    assert g.current == 1 and g.trick == [(0, P.parse("KS"))]
    return set(P.names_of(g.legal_mask()[:N]))


def test_PAR_5_2_follow_suit_when_able_the_fool_always_allowed():
    legal = legal_after_lead("9S 7S XX KH Fool KD QD CD VD AD 2D 3D 4D")
    assert legal == {"9S", "7S", "Fool"}  # no need to beat KS


def test_PAR_5_2_must_trump_when_void_and_may_discard_when_no_trump():
    assert legal_after_lead("XX III KH KD QD CD VD AD 2D 3D 4D QH CH") == {"XX", "III"}  # no overtrump needed
    anything = "KH 4D KD QD CD VD AD 2D 3D QH CH VH AH"
    assert legal_after_lead(anything) == set(anything.split())  # no spade, no trump: any card
    assert legal_after_lead("KH 4D Fool 7S KD QD CD VD AD 2D 3D QH CH") == {"7S", "Fool"}


def test_PAR_5_2_not_following_shows_a_void_to_every_player():
    """A seat that does not follow shows it lacks the suit led; a plain card shows no trumps either;
    the Fool shows nothing. Every player's observation holds these public voids, seat-relative."""
    from tarot_env.rules.partita import OBS
    g = game_with_hands({0: "KS QS CS VS 10S 9S 8S 7S XXI I KD XV XIV XIII XII",
                         1: "KH QH CH VH AH 2H 3H 4H XX XIX XVIII XVII XVI",
                         2: "KC QC CC VC 10C 9C 8C 7C QD CD VD AD 2D",
                         3: "3D 4D Fool XI X IX VIII VII VI V IV III II"}, dealer=0)
    to_play(g, "7S 8S")
    spades, trumps = int(P.suit[P.parse("KS")]), TRUMP
    assert not g.shown_void.any()
    for card in ("KS", "XX", "KC", "Fool"):   # PAR-5.1: the dealer leads
        g.apply(P.parse(card))
    expected = np.zeros((4, 5), dtype=bool)
    expected[1, spades] = True                 # trumped: no spades, trumps still possible
    expected[2, [spades, trumps]] = True       # a club on spades: neither spades nor trumps
    assert (g.shown_void == expected).all()    # seat 3's Fool shows nothing (PAR-5.3)
    for viewer in range(4):
        seen = g.observation(viewer)[OBS.shown_void].reshape(4, 5)
        assert (seen == expected[[(viewer + i) % 4 for i in range(4)]]).all()
    hearts = int(P.suit[P.parse("KH")])
    for card in ("KH", "2D", "II", "XV"):      # seat 1 won with XX and leads; nobody else has hearts
        g.apply(P.parse(card))
    expected[[2, 3, 0], hearts] = True
    assert (g.shown_void == expected).all()


def test_PAR_5_3_the_fool_goes_to_its_team_and_no_card_is_given():
    # play random games until a Fool is played into a trick won by the other team
    for seed in range(200):
        g = PartitaGame(seed=seed)
        rng = np.random.default_rng(seed)
        while g.deals_played == 0:
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
        for trick, w in g.history[0]["tricks"]:
            owners = [s for s, c in trick if c == FOOL]
            if owners and g.team_of[owners[0]] != g.team_of[w]:
                hist = g.history[0]
                assert hist["fool_team"] == g.team_of[owners[0]]
                # the winner's team got only 3 cards from that trick: totals stay 80 (PAR-6.5)
                assert sum(hist["points"]) == 80
                return
    pytest.fail("no Fool lost in 200 deals")


def test_PAR_5_4_thirteen_tricks():
    g = PartitaGame(seed=9)
    rng = np.random.default_rng(9)
    while g.deals_played == 0:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    assert sum(g.history[0]["tricks_won"]) == 13


# --- E.6 scoring --------------------------------------------------------------------------------

def test_PAR_6_1_counting_values():
    v = {P.names[c]: int(P.value[c]) for c in range(N)}
    assert v["XXI"] == v["I"] == v["KS"] == v["KH"] == 4
    assert v["QC"] == 3 and v["CD"] == 2 and v["VH"] == 1
    assert v["AH"] == v["7S"] == v["XX"] == v["Fool"] == 0


def test_PAR_6_2_pairs_score_one_plus_values_and_an_odd_card_one_more():
    assert deal_points(P.mask(["KS", "7S"])) == 1 + 4
    assert deal_points(P.mask(["KS", "7S", "8S"])) == 2 + 4          # odd empty card: 1
    assert deal_points(P.mask(["KS", "QS", "CS"])) == 2 + 4 + 3 + 2  # odd counting card: 1 + value


def test_PAR_6_3_the_fool_counts_five_apart():
    assert deal_points(P.mask(["Fool"])) == 5
    assert deal_points(P.mask(["Fool", "7S", "8S"])) == 5 + 1


def test_PAR_6_4_closed_form_equals_pair_counting():
    rng = np.random.default_rng(0)
    for _ in range(200):
        pile = rng.random(N) < 0.5
        cards = [c for c in np.flatnonzero(pile) if c != FOOL]
        by_pairs = sum(1 + P.value[a] + P.value[b] for a, b in zip(cards[::2], cards[1::2]))
        if len(cards) % 2:
            by_pairs += 1 + P.value[cards[-1]]
        by_pairs += 5 * bool(pile[FOOL])
        assert deal_points(pile) == by_pairs


def test_PAR_6_5_total_80_per_deal():
    pile = np.ones(N, dtype=bool)
    assert deal_points(pile) == 27 + 48 + 5 == 80
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = rng.random(N) < 0.5
        assert deal_points(a) + deal_points(~a) == 80


def test_PAR_6_6_score_is_points_minus_40_and_zero_sum():
    g = random_game(11)
    for h in g.history:
        assert h["scores"] == [h["points"][0] - 40, h["points"][1] - 40]
        assert h["scores"][0] == -h["scores"][1]


def test_PAR_6_7_game_result_is_the_sign_of_the_total_zero_a_draw():
    for seed in range(30):
        g = random_game(seed)
        total = sum(h["scores"][0] for h in g.history)
        assert g.scores.tolist() == [total, -total]
        assert g.winner == (0 if total > 0 else 1 if total < 0 else -1)


def test_E_8_worked_example_41_and_39():
    a = P.mask("KS KH KD QS QC CH VC VD XXI".split())
    b = P.mask("KC QH QD CS CC CD VS VH I Fool".split())
    # fill with empty cards: A has 29 non-Fool cards, B 24 + the Fool
    empties = [c for c in range(N) if P.value[c] == 0 and c != FOOL and not a[c] and not b[c]]
    for c in empties[:29 - int(a.sum())]:
        a[c] = True
    for c in empties[29 - 9:]:
        b[c] = True
    assert a.sum() == 29 and b.sum() - 1 == 24 and not (a & b).any() and (a | b).all()
    assert deal_points(a) == 41 and deal_points(b) == 39
    assert (deal_points(a) - 40, deal_points(b) - 40) == (1, -1)


# --- E.7 signals --------------------------------------------------------------------------------

def test_PAR_7_1_signals_off_by_default_and_public_when_on():
    g = to_play(PartitaGame(seed=2))
    assert not g.legal_mask()[N:].any()
    g = to_play(PartitaGame(PartitaConfig(partita_signals="bolognese3"), seed=2))
    seat = g.current
    assert g.legal_mask()[N:].all()
    g.apply(N + 0)  # VOID
    assert g.current == seat and not g.legal_mask()[N:].any()  # one signal, then the card
    card = g.legal_actions()[0]
    g.apply(card)
    assert g.signals == [(seat, card, 0)]
    from tarot_env.rules.partita import OBS
    for viewer in range(4):
        rel = (seat - viewer) % 4
        sig = g.observation(viewer)[OBS.signals].reshape(4, 3, 6)
        assert sig[rel, 0, P.suit[card]] == 1 and sig.sum() == 1
    with pytest.raises(ValueError):
        PartitaConfig(partita_signals="secret")
