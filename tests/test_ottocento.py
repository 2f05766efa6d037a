"""Ottocento rules (RULES.md Part C with Part B): one or more tests per OTT clause, named after it."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tarot_env.cards import BOLOGNESE as P
from tarot_env.config import make_config
from tarot_env.engine import Signal, trick_winner
from tarot_env.rules import combos
from tarot_env.rules.ottocento import (
    A_MONTE,
    COUNT_ONLY,
    DECLARE_DONE,
    FIVE_POINT,
    HAND_SIZE,
    IN_FAMILY,
    MATTO,
    NUM_ACTIONS,
    OBS,
    PAYMENT_ORDER,
    PLAY_ON,
    STATE,
    N,
    OttocentoConfig,
    OttocentoGame,
    Phase,
    card_points,
    declarable_cards,
    target_team,
    team_hand_score,
)
from tarot_env.vector.base import pack_cards

SIG = N  # first signal id


def ids(text: str) -> list[int]:
    return P.parse_many(text)


def mask(text: str) -> np.ndarray:
    return P.mask(text.split())


def game(seed: int = 0, dealer: int = 0, **opts) -> OttocentoGame:
    return OttocentoGame(make_config(OttocentoConfig, opts), seed=seed, first_dealer=dealer)


def deal(dealer: int, fixed: dict[int, str], **opts) -> OttocentoGame:
    """A game whose hand is dealt from explicit cards: ``fixed[seat]`` names some of that seat's cards,
    the rest are filled in id order (15 per player, 17 for the dealer)."""
    g = game(dealer=dealer, **opts)
    hands = {s: ids(fixed.get(s, "")) for s in range(4)}
    used = {c for h in hands.values() for c in h}
    rest = [c for c in range(N) if c not in used]
    for s in range(4):
        need = (17 if s == dealer else 15) - len(hands[s])
        hands[s] += rest[:need]
        rest = rest[need:]
    g.set_hands(dealer, [hands[s] for s in range(4)])
    return g


def play_on(g: OttocentoGame) -> None:
    while g.phase == Phase.A_MONTE:
        g.apply(PLAY_ON)


def discard(g: OttocentoGame, text: str | None = None) -> None:
    play_on(g)
    for c in ids(text) if text else []:
        g.apply(c)
    while g.phase == Phase.DISCARD:
        g.apply(g.legal_actions()[0])


def declare_nothing(g: OttocentoGame) -> None:
    while g.phase == Phase.DECLARE:
        g.apply(DECLARE_DONE)


def set_discards(g: OttocentoGame, seat: int, cards: np.ndarray) -> None:
    """Seat ``seat``'s discards (bool[62]; the row keeps them as card sets): a state no rule reaches, written
    for the tests of the end-of-hand settlement."""
    g.row.xbits[0, seat] = pack_cards(cards)


def set_won(g: OttocentoGame, team0: np.ndarray, team1: np.ndarray) -> None:
    """The cards each team took in tricks (bool[62] each; the row keeps them as card sets)."""
    g.row.wbits[0] = pack_cards(np.stack([team0, team1]))


def random_step(g: OttocentoGame, rng) -> int:
    legal = np.flatnonzero(g.legal_mask())
    a = int(legal[rng.integers(len(legal))])
    g.apply(a)
    return a


# --- B / OTT-1: pack, seats, teams, dealer ------------------------------------------------------

def test_B_1_pack_and_OTT_1_1_four_players_partners_opposite():
    g = game()
    assert N == 62 and g.num_players == 4 and g.team_of == (0, 1, 0, 1)
    assert NUM_ACTIONS == 68
    assert [g.action_name(a) for a in (62, 63, 64, 65, 66, 67)] == [
        "signal:VOID", "signal:LEAD_TRUMPS", "signal:WIN_AND_RETURN", "a_monte", "play_on", "declare_done"]
    assert g.parse_action("A_MONTE") == A_MONTE and g.parse_action("KD") == P.parse("KD")


def test_OTT_1_2_first_dealer_is_random_unless_fixed():
    dealers = {OttocentoGame(seed=s).dealer for s in range(40)}
    assert dealers == {0, 1, 2, 3}
    assert all(game(seed=s, dealer=2).dealer == 2 for s in range(5))
    assert OttocentoGame(make_config(OttocentoConfig, {"first_dealer": 3}), seed=1).dealer == 3


def test_OTT_1_3_deal_passes_to_the_right_after_every_hand():
    rng = np.random.default_rng(0)
    g = game(seed=3, dealer=1)
    seen = []
    while not g.game_over:
        random_step(g, rng)
    for h in g.history:
        seen.append(h["dealer"])
    assert seen == [(1 + i) % 4 for i in range(len(seen))]


def test_H_1_each_seats_observation_card_sections_are_the_rows_fields_seen_from_its_seat():
    # the observation's writer (``_observe``) writes each card section from the row's card sets: every section is
    # the field it shows, seat-relative (me, right, partner, left; ``won``: my team first), in every phase to the
    # game's end; the scalars, played_trick and the v2 sections are tested apart (each column once:
    # tests/test_sparse_obs.py)
    rng = np.random.default_rng(6)
    g = game(seed=6, ott_signal_players="all", a_monte="ask_all", target_score=300)  # ends with the Matto paid
    steps, shown = 0, set()
    while True:
        for v in range(4):
            o, rel, my = g.observation(v), [(v + i) % 4 for i in range(4)], [v % 2, 1 - v % 2]
            want = {"hand": g.hands[v], "my_discards": g.discards[v], "declared": g.declared[rel],
                    "played": g.played[rel], "trick": g.trick_by[rel], "won": g.won[my],
                    "signals": g.signal_table[rel], "matto_paid": g.matto_paid, "a_monte": g.a_monte_said[rel],
                    "shown_void": g.shown_void[rel], "signal_cards": g.signal_card}
            for k, x in want.items():
                assert np.array_equal(o[OBS.offsets[k]], x.ravel().astype(np.float32)), (k, v, steps)
                shown |= {k} if x.any() else set()
        if g.game_over:
            break
        random_step(g, rng)
        steps += 1
    assert shown == set(want) and steps > 100


# --- OTT-2: the deal ------------------------------------------------------------------------------

def test_OTT_2_1_packets_of_5_from_eldest_and_OTT_2_2_dealer_takes_the_last_2():
    g = game(dealer=2)
    deck = np.arange(N)[::-1].copy()
    g.start_hand(2, deck)
    eldest = 3
    assert g.eldest == eldest and g.current == eldest and g.phase == Phase.A_MONTE
    play_on(g)
    order = [3, 0, 1, 2]  # eldest first, counter-clockwise, the dealer last
    for i, seat in enumerate(order):
        want = np.concatenate([deck[20 * r + 5 * i: 20 * r + 5 * i + 5] for r in range(3)])
        if seat == 2:
            want = np.concatenate([want, deck[60:]])
        assert set(np.flatnonzero(g.hands[seat])) == set(want.tolist())
    assert g.hand_sizes == [15, 15, 17, 15]


def test_OTT_2_3_a_monte_is_asked_after_the_first_round_only():
    g = game(seed=4, dealer=0)
    assert g.phase == Phase.A_MONTE and g.hand_sizes == [5, 5, 5, 5]
    assert g.hands.sum() == 20  # rounds 2 and 3 wait in the deck
    play_on(g)
    assert g.phase == Phase.DISCARD and g.hands.sum() == 62


def test_OTT_2_one_seed_reproduces_the_whole_deal_from_one_shuffle():
    a, b = game(seed=9), game(seed=9)
    first = a.hands.copy()
    play_on(a), play_on(b)
    assert np.array_equal(a.hands, b.hands)
    assert (a.hands & first).sum() == 20  # the first packets stay; the rest comes from the same deck
    assert np.array_equal(a.hands[a.dealer][a.deck[60:]], [True, True])


# --- OTT-3: a monte ----------------------------------------------------------------------------

def test_OTT_3_1_eldest_speaks_first_then_counter_clockwise_to_the_dealer():
    g = game(dealer=1, a_monte="ask_all")
    order = []
    while g.phase == Phase.A_MONTE:
        order.append(g.current)
        assert g.legal_actions() == [A_MONTE, PLAY_ON]
        g.apply(PLAY_ON)
    assert order == [2, 3, 0, 1]
    assert g.phase == Phase.DISCARD


def test_OTT_3_2_all_four_a_monte_throws_the_hand_in_and_the_deal_passes():
    g = game(seed=2, dealer=3)
    for _ in range(4):
        g.apply(A_MONTE)
    assert g.history == [{"hand": 0, "dealer": 3, "scores": [0, 0], "thrown_in": True}]
    assert g.scores.tolist() == [0, 0] and g.hands_played == 1
    assert g.dealer == 0 and g.phase == Phase.A_MONTE and g.hand_sizes == [5, 5, 5, 5]
    assert not g.a_monte_said.any()  # a fresh hand


def test_OTT_3_2_one_play_on_continues_the_deal_and_by_default_stops_the_asking():
    g = game(dealer=0)
    g.apply(A_MONTE)  # eldest (1)
    g.apply(PLAY_ON)  # seat 2
    assert g.phase == Phase.DISCARD and g.current == 0
    assert g.a_monte_said[1].tolist() == [True, False] and g.a_monte_said[2].tolist() == [False, True]
    assert not g.a_monte_said[[3, 0]].any()
    g = game(dealer=0, a_monte="ask_all")
    for a in (A_MONTE, PLAY_ON, A_MONTE, A_MONTE):
        g.apply(a)
    assert g.phase == Phase.DISCARD and g.history == []
    g = game(dealer=0, a_monte="off")
    assert g.phase == Phase.DISCARD and g.hand_sizes == [17, 15, 15, 15]


def test_OTT_3_answers_are_public_in_every_observation():
    g = game(dealer=0, a_monte="ask_all")
    g.apply(A_MONTE)  # seat 1 (eldest)
    g.apply(PLAY_ON)  # seat 2
    for seat in range(4):
        am = g.observation(seat)[OBS.a_monte].reshape(4, 2)
        assert am[(1 - seat) % 4].tolist() == [1, 0]
        assert am[(2 - seat) % 4].tolist() == [0, 1]
        assert am[(3 - seat) % 4].tolist() == [0, 0]
        assert g.observation(seat)[OBS.phase][Phase.A_MONTE] == 1


# --- OTT-4: the dealer's discard --------------------------------------------------------------

def test_OTT_4_1_dealer_discards_two_face_down_into_his_team_pile():
    g = game(seed=1, dealer=2)
    play_on(g)
    assert g.current == 2 and g.phase == Phase.DISCARD
    a, b = g.legal_actions()[:2]
    g.apply(a)
    assert g.phase == Phase.DISCARD and g.current == 2
    g.apply(b)
    assert g.discards[2].sum() == 2 and g.discards[2, [a, b]].all()
    assert g.hand_sizes == [15, 15, 15, 15] and g.phase == Phase.DECLARE


def test_OTT_4_2_no_five_point_card_may_be_discarded():
    assert P.names_of(FIVE_POINT) == ["Angel", "World", "Begato", "Matto", "KD", "KC", "KS", "KB"]
    g = deal(0, {0: "Angel World Begato Matto KD KC KS KB"})
    play_on(g)
    legal = g.legal_mask()
    assert not legal[:N][FIVE_POINT].any()
    assert np.array_equal(legal[:N], g.hands[0] & ~FIVE_POINT)
    assert not legal[N:].any()
    before = json.dumps(g.to_dict())
    with pytest.raises(ValueError, match=r"illegal action 21 \(Matto\).*DISCARD.*legal now:"):
        g.apply(MATTO)
    assert json.dumps(g.to_dict()) == before


def test_OTT_4_3_discards_go_to_the_opponents_when_the_dealers_team_takes_no_trick():
    g = game(seed=0, dealer=0)
    discard(g)
    declare_nothing(g)
    d = np.flatnonzero(g.discards[0])
    set_won(g, mask("Matto"), ~g.discards[0] & ~mask("Matto"))  # team 1 took every trick; the Matto sits with
    #                                                              its owner, who is on team 0
    g.row.excuse_owner[0], g.row.excuse_trick_winner[0] = 0, 1
    g.row.tricks_won[0] = [0, 15]
    piles, info = g.team_piles()
    assert info["discards_to"] == 1 and piles[1, d].all() and not piles[0].any()
    assert info["matto_team"] == 1  # OTT-7.4 too: the trickless team surrenders the Matto
    g.row.tricks_won[0] = [1, 14]
    piles, info = g.team_piles()
    assert info["discards_to"] == 0 and piles[0, d].all()


# --- OTT-5: declarations ----------------------------------------------------------------------

def test_OTT_5_1_declarations_after_the_discard_eldest_first_dealer_last():
    g = game(seed=5, dealer=3)
    discard(g)
    order = []
    while g.phase == Phase.DECLARE:
        order.append(g.current)
        g.apply(DECLARE_DONE)
    assert order == [0, 1, 2, 3]
    assert g.phase == Phase.PLAY and g.current == 0


def test_OTT_5_2_declared_cards_are_public_and_stay_in_the_hand():
    g = deal(0, {1: "KD KC KS KB Moor1 Moor2"})
    discard(g)
    assert g.current == 1
    for c in ids("KD KC KS"):
        g.apply(c)
    # revealed cards are public from the moment they are laid down (H.3)
    for seat in range(4):
        dec = g.observation(seat)[OBS.declared].reshape(4, N)[(1 - seat) % 4]
        assert P.names_of(dec > 0) == ["KD", "KC", "KS"]
    g.apply(DECLARE_DONE)
    assert g.hands[1, ids("KD KC KS")].all() and g.hand_sizes[1] == 15
    assert g.declared_points[1] == 17  # three Kings: a smaller set than held (OTT-5.2)


def test_OTT_5_2_declaring_is_optional_and_a_partial_declaration_cannot_be_closed():
    g = deal(0, {1: "KD KC KS QD"})
    discard(g)
    m = g.legal_mask()
    assert m[DECLARE_DONE]  # declare nothing
    g.apply(P.parse("KD"))
    assert not g.legal_mask()[DECLARE_DONE]  # one King does not score
    g.apply(P.parse("KC"))
    assert not g.legal_mask()[DECLARE_DONE]
    with pytest.raises(ValueError, match="declare_done"):
        g.apply(DECLARE_DONE)
    g.apply(P.parse("KS"))
    assert g.legal_mask()[DECLARE_DONE]


def test_OTT_5_2_only_cards_that_can_still_score_may_be_revealed():
    g = deal(0, {1: "KD QD CD Moor1 Moor2 Matto 7S 8S 9S 10B"}, moors_double_count=True)
    discard(g)
    m = g.legal_mask()
    hand = g.hands[1]
    allowed = declarable_cards(hand)
    assert np.array_equal(m[:N], allowed)
    assert not m[ids("7S 8S 9S 10B")].any()  # plain pips never score
    assert m[ids("KD QD CD Moor1 Moor2 Matto")].all()


def _fully_scoring_subsets(hand: list[int], **flags) -> set[frozenset]:
    out = {frozenset()}
    for r in range(1, len(hand) + 1):
        for sub in itertools.combinations(hand, r):
            if combos.is_scoring_declaration(list(sub), **flags):
                out.add(frozenset(sub))
    return out


EXHAUSTIVE_HANDS = [
    ("KD QD JD AD Begato Moor1 Moor2 AC 7S 8S 9S 10S 6S 7B 8B", {}),
    ("Angel World Moon T16 Matto KD KC KS QS 7S 8S 9S 10S 6S 7B", {}),
    ("KD KC QD QC CD CC JD JC Matto 7S 8S 9S 10S 6S 7B", {}),
    ("Angel Sun Moor1 Moor2 Moor3 Begato AS AB KB QB 7S 8S 9S 10S 6S", {"moors_double_count": False}),
    ("KB QB CB JB AB KS Matto Begato 7D 8D 9D 10D 6D 7C 8C", {"suit_min_natural": 3}),
    # O-2 binds the suits only: Angel [World skip] [Sun <- Matto] Moon scores under 3, K Q Matto not
    ("Angel Moon Matto KD QD AD KC CC JC KS QS CS 8S 9S 7B", {"suit_min_natural": 3}),
]


@pytest.mark.parametrize("hand_text,flags", EXHAUSTIVE_HANDS)
def test_OTT_5_2_every_scoring_subset_is_reachable_every_other_is_masked_no_dead_end(hand_text, flags):
    """Exhaustive on one hand: the reachable revealed sets where DONE is legal are exactly the fully
    scoring subsets of the hand (and the empty set), and DONE stays reachable from every state."""
    hand = ids(hand_text)
    assert len(hand) == 15
    g = deal(0, {1: hand_text}, **flags)
    discard(g)
    assert g.current == 1 and set(np.flatnonzero(g.hands[1])) == set(hand)
    # a card outside every combination family (a plain pip) can never score: enumerate the others
    want = _fully_scoring_subsets([c for c in hand if IN_FAMILY[c]], **flags)
    seen: dict[frozenset, bool] = {}
    stack = [(frozenset(), g.clone())]
    while stack:
        revealed, state = stack.pop()
        if revealed in seen:
            continue
        m = state.legal_mask()
        seen[revealed] = bool(m[DECLARE_DONE])
        assert m[DECLARE_DONE] or m[:N].any(), f"dead end at {P.names_of(list(revealed))}"
        for c in np.flatnonzero(m[:N]):
            nxt = state.clone()
            nxt.apply(int(c))
            stack.append((revealed | {int(c)}, nxt))
    done_states = {s for s, ok in seen.items() if ok}
    assert done_states == want
    maximal = frozenset(np.flatnonzero(declarable_cards(np.isin(np.arange(N), hand), **flags)).tolist())
    assert maximal in want and all(s <= maximal for s in seen)  # DONE reachable from everywhere
    assert len(want) > 8


@pytest.mark.parametrize("flags", [{}, {"moors_double_count": False}, {"suit_min_natural": 3},
                                   {"moors_double_count": False, "suit_min_natural": 3}])
def test_OTT_5_2_declarable_many_is_declarable_cards_hand_by_hand(flags):
    """M(hand) of many hands at once (the batched engine's) equals the one-hand fixed point: on the
    exhaustive hands above and on 3,000 random 15-card hands."""
    from tarot_env.rules.ottocento import declarable_many

    rng = np.random.default_rng(9)
    hands = [np.isin(np.arange(N), ids(text)) for text, _ in EXHAUSTIVE_HANDS]
    hands += [np.isin(np.arange(N), rng.choice(N, 15, replace=False)) for _ in range(3000)]
    bits = np.array([sum(1 << int(c) for c in np.flatnonzero(h)) for h in hands], dtype=np.uint64)
    got = declarable_many(bits, **flags)
    for h, m in zip(hands, got.tolist()):
        assert m == sum(1 << int(c) for c in np.flatnonzero(declarable_cards(h, **flags)))
    assert (got != 0).mean() > 0.3 and (got != bits).any()  # many hands can declare; pips are dropped


def test_OTT_5_2_random_declaration_walks_always_finish_and_score():
    rng = np.random.default_rng(3)
    for seed in range(150):
        g = game(seed=seed, dealer=seed % 4, moors_double_count=bool(seed % 2),
                 suit_min_natural=2 + seed % 3 // 2)
        discard(g)
        while g.phase == Phase.DECLARE:
            seat = g.current
            steps = 0
            while g.current == seat and g.phase == Phase.DECLARE:
                m = g.legal_mask()
                choices = np.flatnonzero(m)
                assert len(choices) > 0
                # prefer reveals, so the walks go deep
                reveals = choices[choices < N]
                a = int(reveals[rng.integers(len(reveals))]) if len(reveals) and rng.random() < .8 \
                    else int(choices[rng.integers(len(choices))])
                g.apply(a)
                steps += 1
                assert steps <= 16
            dec = g.declared[seat]
            pts = combos.combo_points(dec, **g._flags()) if dec.any() else 0
            assert g.declared_points[seat] == pts
            assert not dec.any() or combos.is_scoring_declaration(dec, **g._flags())


def test_OTT_5_3_declaration_points_per_player_doubling_never_across_partners():
    # seat 1 (eldest) declares two suit sequences, partner 3 a third: no 3-sequence doubling
    g = deal(0, {1: "KD QD CD KC QC CC", 3: "KS QS CS"})
    discard(g)
    for c in ids("KD QD CD KC QC CC"):
        g.apply(c)
    g.apply(DECLARE_DONE)  # seat 1: 10 + 10
    g.apply(DECLARE_DONE)  # seat 2
    for c in ids("KS QS CS"):
        g.apply(c)
    g.apply(DECLARE_DONE)  # seat 3: 10
    g.apply(DECLARE_DONE)  # seat 0, the dealer
    assert g.declared_points == [0, 20, 0, 10]
    dp = g.declared_points  # OTT-5.3: each team's
    assert [dp[0] + dp[2], dp[1] + dp[3]] == [0, 30]
    # together the same cards would be 3 sequences doubled (60) + Kings, Queens, Cavaliers (Criccone)
    assert combos.combo_points(ids("KD QD CD KC QC CC KS QS CS")) == 60 + 2 * (17 + 14 + 13)
    assert g.scores.tolist() == [0, 30]  # OTT-6.1: into the cumulative score at once


def test_OTT_5_4_declared_points_count_whatever_the_play_and_cards_can_score_twice():
    rng = np.random.default_rng(8)
    checked = 0
    for seed in range(40):
        g = game(seed=seed)
        while not g.game_over:
            random_step(g, rng)
        for h in g.history:
            if h.get("thrown_in") or h.get("won_at_declarations"):
                continue
            for t in range(2):
                assert h["scores"][t] == (h["declared_team"][t] + h["combo"][t] + h["card_points"][t]
                                          + 6 * (h["last_trick"] == t))
                checked += h["declared_team"][t] > 0 and h["combo"][t] > 0
    assert checked > 10


def test_OTT_5_5_encoding_one_card_at_a_time_then_done():
    g = deal(0, {1: "Moor1 Moor2 Matto"})
    discard(g)
    names = [g.action_name(a) for a in g.legal_actions()]
    assert "declare_done" in names and "Moor1" in names
    for c in ids("Moor1 Moor2 Matto"):
        g.apply(c)
    g.apply(DECLARE_DONE)
    assert g.declared_points[1] == 10  # Moors 2 + Matto (the C.11 declaration of team B)


# --- OTT-6: winning at the declarations -------------------------------------------------------

def _declare_kings(g, seat_cards: dict[int, str]):
    while g.phase == Phase.DECLARE:
        for c in ids(seat_cards.get(g.current, "")):
            g.apply(c)
        g.apply(DECLARE_DONE)


def test_OTT_6_1_a_team_reaching_800_at_the_declarations_wins_at_once():
    g = deal(0, {1: "KD KC KS"})
    g.row.scores[0] = [700, 790]
    discard(g)
    _declare_kings(g, {1: "KD KC KS"})
    assert g.game_over and g.winner == 1 and g.phase == Phase.GAME_OVER
    assert g.scores.tolist() == [700, 807]
    h = g.history[-1]
    assert h["won_at_declarations"] and h["scores"] == [0, 17] and g.tricks == []


def test_OTT_6_1_both_teams_at_800_the_higher_wins_and_a_tie_plays_on():
    g = deal(0, {1: "KD KC KS", 2: "QD QC QS"})
    g.row.scores[0] = [790, 790]
    discard(g)
    _declare_kings(g, {1: "KD KC KS", 2: "QD QC QS"})
    assert g.game_over and g.winner == 1 and g.scores.tolist() == [804, 807]
    g = deal(0, {1: "KD KC KS", 2: "QD QC QS"})
    g.row.scores[0] = [793, 790]
    discard(g)
    _declare_kings(g, {1: "KD KC KS", 2: "QD QC QS"})
    assert not g.game_over and g.phase == Phase.PLAY and g.scores.tolist() == [807, 807]


# --- OTT-7: card play ---------------------------------------------------------------------------

def test_OTT_7_1_eldest_leads_and_15_tricks_are_played():
    rng = np.random.default_rng(1)
    g = game(seed=11, dealer=2)
    discard(g)
    declare_nothing(g)
    assert g.phase == Phase.PLAY and g.current == g.leader == 3
    hand = g.hands_played
    while g.hands_played == hand:
        random_step(g, rng)
    assert sum(g.history[-1]["tricks_won"]) == 15


def test_OTT_7_2_B_4_1_to_B_4_3_follow_suit_else_trump_else_anything_matto_any_time():
    g = deal(0, {
        1: "KD KS QS CS JS 10S 9S 8S 7S 6S AS 10B 9B 8B 7B",
        2: "QD CD JD AD Matto T16 Angel World Sun Moon T15 T14 T13 T12 T11",
        3: "KC QC CC JC AC 6C 7C 8C 9C 10C KB QB CB JB AB",
        0: "6D 7D 8D 9D 10D T10 T9 T8 T7 T6 T5 Moor1 Moor2 Moor3 Moor4 Begato 6B",
    })
    discard(g, "6B T5")
    declare_nothing(g)
    g.apply(P.parse("KD"))  # eldest leads (B.4.1)
    assert P.names_of(g.legal_mask()[:N]) == ["Matto", "QD", "CD", "JD", "AD"]  # follow, or the Matto
    g.apply(P.parse("QD"))
    assert np.array_equal(g.legal_mask()[:N], g.hands[3])  # no coins, no trumps: anything
    g.apply(P.parse("10C"))
    assert P.names_of(g.legal_mask()[:N]) == ["6D", "7D", "8D", "9D", "10D"]
    g.apply(P.parse("6D"))
    assert g.tricks[-1][1] == 1 and g.current == 1  # KD wins; the winner leads
    g.apply(P.parse("KS"))
    want = g.hands[2] & (P.suit == 4)
    want[MATTO] = True
    assert np.array_equal(g.legal_mask()[:N], want)  # no swords: a trump, or the Matto


def test_OTT_7_2_B_2_2_equal_moors_the_last_played_wins():
    m1, m2, m3 = ids("Moor1 Moor2 Moor3")
    assert trick_winner(P, [(0, m1), (1, m2), (2, P.parse("KD")), (3, m3)]) == 3
    assert trick_winner(P, [(0, m3), (1, m1), (2, P.parse("7D")), (3, P.parse("8D"))]) == 1
    assert trick_winner(P, [(0, P.parse("T5")), (1, m1), (2, m2)]) == 0
    assert trick_winner(P, [(0, MATTO), (1, P.parse("7D")), (2, P.parse("8D"))]) == 1  # B.4.4


def _with_matto_trick(owner: int, winner: int, owner_team_pile: str, tricks_won: list[int]):
    g = game(seed=0, dealer=0)
    discard(g)
    declare_nothing(g)
    set_discards(g, 0, np.zeros(N, dtype=bool))  # keep this test to the Matto
    won = np.zeros((2, N), dtype=bool)
    mine = owner % 2
    won[mine] = mask(owner_team_pile) | mask("Matto")
    won[1 - mine] = ~won[mine]
    set_won(g, *won)
    g.row.excuse_owner[0], g.row.excuse_trick_winner[0] = owner, winner
    g.row.tricks_won[0] = tricks_won
    return g


def test_OTT_7_3_B_4_5_matto_back_to_its_owner_and_a_low_card_to_the_opponents_at_the_end():
    g = _with_matto_trick(1, 2, "KD QD 8S 10D AS", [10, 5])
    piles, info = g.team_piles()
    assert piles[1, MATTO] and not piles[0, MATTO]
    # the lowest value is 1; plain pips (in no combination family) first, then the lowest trick rank
    assert P.names[info["matto_paid"]] == "10D" and piles[0, P.parse("10D")]
    g = _with_matto_trick(1, 2, "KD QD AS Moor1 T16", [10, 5])
    _, info = g.team_piles()
    assert P.names[info["matto_paid"]] == "AS"  # no plain pip: the lowest trick rank (a suit card)
    g = _with_matto_trick(1, 2, "KD QD CD JD", [10, 5])
    _, info = g.team_piles()
    assert P.names[info["matto_paid"]] == "JD"  # no value-1 card: the lowest value (OTT-7.3 O-9)


def test_OTT_7_3_the_candidate_whose_loss_costs_the_pile_the_fewest_combination_points():
    # RULES.md OTT-7.3: the value-1 cards AD AC AS T5 Moon; giving the AS breaks the Aces (the three
    # sequences Coins 20, Cups 15, Aces 10 doubled = 90 fall to 35: 55 lost), the T5 costs nothing
    pile = "KD QD CD JD AD AC AS T5 Moon KC QC CC"
    g = _with_matto_trick(1, 2, pile, [10, 5])
    piles, info = g.team_piles()
    assert P.names[info["matto_paid"]] == "T5" and piles[0, P.parse("T5")] and not piles[1, P.parse("T5")]
    base = combos.combo_points(mask(pile))
    assert base - combos.combo_points(mask(pile.replace(" AS", ""))) == 55
    assert base - combos.combo_points(mask(pile.replace(" T5", ""))) == 0
    # of two equal losses (T5, Moon: 0) the PAYMENT_ORDER tie-break (lower trick rank) decides
    assert PAYMENT_ORDER.tolist().index(P.parse("T5")) < PAYMENT_ORDER.tolist().index(P.parse("Moon"))
    # no value-1 card (O-9): of the lowest value (the Jacks, 2) the cheaper one, although the JD comes
    # first in PAYMENT_ORDER: Coins K [Q skip] [C <- Matto] J (10) would break, Swords K Q C J + Matto
    # only shortens (20 -> 15). (The team's pile holds the Matto, a contatore.)
    g = _with_matto_trick(1, 2, "KD JD KS QS CS JS", [10, 5])
    _, info = g.team_piles()
    assert P.names[info["matto_paid"]] == "JS"
    assert PAYMENT_ORDER.tolist().index(P.parse("JD")) < PAYMENT_ORDER.tolist().index(P.parse("JS"))


@pytest.mark.parametrize("flags", [{}, {"moors_double_count": False}, {"suit_min_natural": 3},
                                   {"moors_double_count": False, "suit_min_natural": 3}])
def test_OTT_7_3_matto_payments_is_the_least_loss_then_payment_order_on_random_piles(flags):
    from tarot_env.rules.ottocento import matto_payments

    rng = np.random.default_rng(3)
    piles = rng.random((300, N)) < rng.uniform(0.1, 0.7, (300, 1))
    piles[:, MATTO] = True
    got = matto_payments(piles, **flags)
    rank = PAYMENT_ORDER.tolist()
    for pile, card in zip(piles, got.tolist()):
        cand = [c for c in np.flatnonzero(pile) if c != MATTO]
        low = min(P.value[c] for c in cand)
        cand = [c for c in cand if P.value[c] == low]
        base = combos.combo_points(pile, **flags)

        def loss(c, pile=pile, base=base):
            p = pile.copy()
            p[c] = False
            return base - combos.combo_points(p, **flags)

        assert card == min(cand, key=lambda c: (loss(c), rank.index(c)))
        assert card == matto_payments(pile[None], **flags)[0]  # one pile: the one-set walk
    assert (got >= 0).all() and matto_payments(mask("Matto")[None]).tolist() == [-1]


def test_OTT_7_3_no_payment_when_the_partner_won_the_trick():
    g = _with_matto_trick(1, 3, "KD QD 8S 10D", [10, 5])
    piles, info = g.team_piles()
    assert info["matto_paid"] == -1 and piles[1, MATTO] and piles[1, P.parse("10D")]


def test_OTT_7_3_payment_order_is_by_value_then_plain_pips_then_trick_rank():
    order = [P.names[c] for c in PAYMENT_ORDER]
    assert order[:2] == ["10D", "10C"] and "Matto" not in order
    assert all(P.value[PAYMENT_ORDER[i]] <= P.value[PAYMENT_ORDER[i + 1]] for i in range(N - 2))
    assert order.index("9S") < order.index("AS") < order.index("Moor1")


def test_OTT_7_4_B_4_6_matto_surrendered_if_its_team_took_no_trick():
    g = _with_matto_trick(1, 2, "", [15, 0])
    piles, info = g.team_piles()
    assert piles[0, MATTO] and not piles[1].any() and info["matto_team"] == 0 and info["matto_paid"] == -1


# --- OTT-8: signals -----------------------------------------------------------------------------

def _to_play(seed=0, dealer=0, **opts):
    g = game(seed=seed, dealer=dealer, **opts)
    discard(g)
    declare_nothing(g)
    return g


def test_OTT_8_1_a_signal_goes_with_the_next_card_and_OTT_8_2_is_public():
    g = _to_play(dealer=0)
    assert g.current == 1 == g.eldest
    m = g.legal_mask()
    assert m[SIG:SIG + 3].all()
    g.apply(SIG + Signal.LEAD_TRUMPS)
    m = g.legal_mask()
    assert not m[SIG:SIG + 3].any() and m[:N].any()  # exactly one signal, then the card
    assert g.observation(1)[OBS.pending_signal].tolist() == [0, 1, 0]
    card = int(np.flatnonzero(m[:N])[0])
    g.apply(card)
    assert g.signals == [(1, card, int(Signal.LEAD_TRUMPS))]
    suit = int(P.suit[card])
    for seat in range(4):
        table = g.observation(seat)[OBS.signals].reshape(4, 3, 6)
        assert table[(1 - seat) % 4, Signal.LEAD_TRUMPS, suit] == 1 and table.sum() == 1


def test_OTT_8_3_only_eldest_signals_by_default_everyone_with_the_option():
    g = _to_play(dealer=0)
    g.apply(g.legal_actions()[0])  # eldest plays without a signal
    assert g.current == 2 and not g.legal_mask()[SIG:SIG + 3].any()
    g = _to_play(dealer=0, ott_signal_players="all")
    g.apply(g.legal_actions()[0])
    assert g.current == 2 and g.legal_mask()[SIG:SIG + 3].all()


def test_OTT_8_4_after_top_card_played_timing():
    g = deal(0, {1: "KD 7D 8D 9D", 2: "6D QD", 3: "AD", 0: "6B 7B"}, ott_signal_timing="after_top_card_played",
             ott_signal_players="all")
    discard(g, "6B 7B")
    declare_nothing(g)
    # no King and no Angel played yet: no signal at all
    assert g.current == 1 and not g.legal_mask()[SIG:SIG + 3].any()
    g.apply(P.parse("KD"))
    # seat 2 follows coins: the King of coins is out, so a signal may go with a coin
    assert g.legal_mask()[SIG:SIG + 3].all()
    g.apply(SIG + Signal.VOID)
    m = g.legal_mask()
    assert m[:N].any() and (P.suit[np.flatnonzero(m[:N])] == 0).all()
    g2 = deal(0, {1: "KD"}, ott_signal_timing="any")
    discard(g2)
    declare_nothing(g2)
    assert g2.legal_mask()[SIG:SIG + 3].all()


def test_OTT_8_5_only_the_three_seed_signals_exist():
    assert [s.name for s in Signal] == ["VOID", "LEAD_TRUMPS", "WIN_AND_RETURN"]
    assert NUM_ACTIONS == N + 3 + 3


# --- OTT-9 / B.3: scoring ---------------------------------------------------------------------

def test_B_3_2_card_points_in_pairs_and_B_3_3_the_pack_totals_87():
    assert card_points(mask("KD 7D")) == 5  # King + scartino
    assert card_points(mask("7D 8D")) == 1  # two scartini
    assert card_points(mask("Begato CD")) == 7  # 5 + 3 - 1 (Barilli)
    assert card_points(np.ones(N, dtype=bool)) == 87
    with pytest.raises(ValueError, match="even"):
        card_points(mask("KD"))


C11_A = ("Angel World Begato KD KC KS QD QB CC JD JC JS JB Sun Moon T16 T15 T14 AD AC Moor1 Moor2 "
         "6D 7D 8D 9D 10D 6C 7C 8C 9C 10C 6S 7S")
C11_B = "Matto KB QC QS CD CS CB T13 T12 T11 T10 T9 T8 T7 T6 T5 Moor3 Moor4 AS AB 8S 9S 10S 6B 7B 8B 9B 10B"


def test_C_11_worked_example_on_explicit_piles_398_and_133():
    a, b = mask(C11_A), mask(C11_B)
    assert a.sum() == 34 and b.sum() == 28 and not (a & b).any() and (a | b).all()
    assert card_points(a) == 53 and card_points(b) == 34
    assert combos.combo_points(a) == 118 + 210 and combos.combo_points(b) == 13 + 70
    assert combos.combo_points(mask("KD KC KS")) == 17 and combos.combo_points(mask("Moor3 Moor4 Matto")) == 10
    assert team_hand_score(a, declared=17) == 398
    assert team_hand_score(b, declared=10, last_trick=True) == 133


def test_C_11_worked_example_through_the_game_transfers():
    """The same hand as a game state: A (team 0) deals and discards 6D 7D; B's Matto went to a trick
    won by A and B pays 10D at the end (OTT-7.3); B took the last trick."""
    g = game(seed=0, dealer=0)
    discard(g)
    declare_nothing(g)
    set_discards(g, 0, mask("6D 7D"))
    set_won(g, mask(C11_A) & ~mask("6D 7D 10D"), mask(C11_B) | mask("10D"))
    assert g.won.sum() + 2 == 62
    g.row.tricks_won[0] = [8, 7]
    g.row.trick_winners[0, HAND_SIZE - 1] = 1  # the last trick: won by seat 1 (team B)
    g.row.excuse_owner[0], g.row.excuse_trick_winner[0] = 3, 2
    g.row.declared_points[0] = [17, 10, 0, 0]
    scores, info = g.hand_scores()
    assert scores == [398, 133]
    assert P.names[info["matto_paid"]] == "10D" and info["discards_to"] == 0
    assert info["pile_sizes"] == [34, 28] and sum(info["card_points"]) == 87


def test_OTT_9_1_both_teams_score_and_cumulative_scores_are_the_sum_of_the_hands():
    rng = np.random.default_rng(2)
    for seed in range(30):
        g = game(seed=seed)
        while not g.game_over:
            random_step(g, rng)
        totals = np.sum([h["scores"] for h in g.history], axis=0)
        assert g.scores.tolist() == totals.tolist()


# --- OTT-10: the end of the game --------------------------------------------------------------

def _finish_hand(g, rng):
    n = g.hands_played
    while g.hands_played == n and not g.game_over:
        random_step(g, rng)


def test_OTT_10_1_first_to_800_wins_and_OTT_10_2_higher_wins_when_both():
    rng = np.random.default_rng(0)
    g = _to_play(seed=1)
    g.row.scores[0] = [799, 0]
    _finish_hand(g, rng)
    assert g.game_over and g.winner == 0  # a hand always scores more than 1 (card points)
    g = _to_play(seed=1)
    g.row.scores[0] = [790, 795]
    _finish_hand(g, rng)
    s = g.scores
    assert g.game_over and g.winner == int(np.argmax(s)) and s[0] != s[1]


def test_OTT_10_3_exact_tie_at_800_plays_on_and_max_hands_ends_in_a_draw():
    g = game(seed=0)
    g.row.scores[0] = [900, 900]
    assert target_team(*g.scores.tolist(), g.config.target_score) == -1  # no winner: play on
    g.row.scores[0] = [900, 901]
    assert target_team(*g.scores.tolist(), g.config.target_score) == 1
    rng = np.random.default_rng(0)
    g = game(seed=0, max_hands=2, target_score=100_000)
    while not g.game_over:
        random_step(g, rng)
    assert g.hands_played == 2 and g.winner == -1 and g.truncated and g.phase == Phase.GAME_OVER


def test_OTT_10_3_thrown_in_hands_count_towards_max_hands():
    g = game(seed=0, max_hands=2)
    for _ in range(8):
        g.apply(A_MONTE)
    assert g.game_over and g.winner == -1 and g.truncated and len(g.history) == 2


def test_small_target_score_option_ends_games_quickly():
    rng = np.random.default_rng(0)
    g = game(seed=3, target_score=50)
    while not g.game_over:
        random_step(g, rng)
    assert max(g.scores) >= 50 and g.winner in (0, 1) and len(g.history) <= 2


# --- invariants over >= 1,000 seeded random games (B.3, OTT-4, OTT-7) ----------------------------

def apply_recording(g: OttocentoGame, action: int, log: list) -> None:
    """``g.apply_unchecked(action)``; when the action closes the hand's last trick, first log the final
    piles (after the transfers) as the end of the hand counts them, on a copy of the game whose row took
    the same action (``OttocentoRows.act`` with ``COUNT_ONLY``: the trick closed and the hand counted, no new
    deal)."""
    if g.phase == Phase.PLAY and action < N and g.row.ntricks[0] == HAND_SIZE - 1 and g.row.trick_len[0] == 3:
        c = g.clone()
        c.row.act(np.array([action]), COUNT_ONLY)
        piles, info = c.team_piles()
        log.append((piles, info, c.tricks_won.copy(), c.dealer, c.discards[c.dealer].copy(), c.excuse_owner,
                    c.excuse_trick_winner))
    g.apply_unchecked(action)


@pytest.mark.slow
def test_invariants_over_1000_random_games():
    """62 cards accounted for; card points 87 (93 with the last trick); pile sizes; the discard and
    Matto transfers; history sums to the scores."""
    counts = {"matto_paid": 0, "matto_surrendered": 0, "discards_forfeited": 0, "hands": 0, "thrown": 0}
    for seed in range(1000):
        g = OttocentoGame(make_config(OttocentoConfig, {"ott_signal_players": "all"} if seed % 2 else {}), seed=seed)
        piles_log: list = []
        rng = np.random.default_rng(seed)
        steps = 0
        while not g.game_over:
            if seed < 50 and g.phase != Phase.A_MONTE:  # every step: each card in exactly one place
                where = g.hands.sum(0) + g.played.sum(0) + g.discards.sum(0)
                assert (where == 1).all()
                assert g.hand_sizes == g.hands.sum(1).tolist()
            legal = np.flatnonzero(g.legal_mask())
            apply_recording(g, int(legal[rng.integers(len(legal))]), piles_log)
            steps += 1
        assert steps < 3000
        assert g.scores.tolist() == np.sum([h["scores"] for h in g.history], axis=0).tolist()
        played = [h for h in g.history if not h["thrown_in"] and not h.get("won_at_declarations")]
        counts["thrown"] += sum(h["thrown_in"] for h in g.history)
        assert len(played) == len(piles_log)
        for h, (piles, info, tw, dealer, disc, owner, w) in zip(played, piles_log):
            counts["hands"] += 1
            assert not (piles[0] & piles[1]).any() and (piles[0] | piles[1]).all()  # 62 accounted for
            assert sum(h["card_points"]) == 87  # B.3.3
            assert sum(h["card_points"]) + 6 == 93
            assert sum(tw) == 15 and disc.sum() == 2 and not (disc & FIVE_POINT).any()
            dt = dealer % 2
            to = dt if tw[dt] else 1 - dt
            assert info["discards_to"] == to and piles[to][disc].all()  # OTT-4.3
            counts["discards_forfeited"] += to != dt
            mine = owner % 2
            sizes = [4 * tw[0], 4 * tw[1]]
            sizes[to] += 2
            if tw[mine] == 0:  # OTT-7.4: the Matto goes to the opponents with the trick
                assert piles[1 - mine, MATTO]
                counts["matto_surrendered"] += 1
            else:
                assert piles[mine, MATTO]
                paid = info["matto_paid"]
                if w % 2 != mine:  # OTT-7.3: one low card for it
                    assert paid >= 0 and piles[1 - mine, paid]
                    counts["matto_paid"] += 1
                else:
                    assert paid == -1
            assert h["pile_sizes"] == sizes == [int(piles[0].sum()), int(piles[1].sum())]
            assert all(s % 2 == 0 for s in sizes)  # B.3.4
    assert counts["hands"] > 2000 and counts["matto_paid"] > 500 and counts["thrown"] > 50
    assert counts["discards_forfeited"] + counts["matto_surrendered"] >= 0


# --- determinism, cloning, serialisation, bad input ------------------------------------------

SAVED = Path(__file__).parent / "data" / "ottocento_states_2026-12-04.json"  # saved by the engine of 2026-12-04


def _saved_games():
    """The states saved by the engine of 2026-12-04 (its row: the per-card cells in one bool ``blocks``, M(hand)
    twice) with the game their seed, options and actions replay now."""
    for case in json.loads(SAVED.read_text()):
        g = game(seed=case["seed"], dealer=None, **case["options"])
        for a in case["actions"]:
            g.apply(a)
        yield case["state"], g


def test_a_state_saved_on_2026_12_04_still_loads_as_the_same_game():
    """A state saved before the per-card cells became card sets (2026-12-05) loads as the game it was: the one
    its seed and actions replay, the same row, observations and legal actions; its saved states cover each phase,
    the a monte answers, the discards, a declaration under way, signals, voids and a paid Matto."""
    shown = np.zeros(6, dtype=bool)
    for saved, g in _saved_games():
        h = OttocentoGame.from_dict(saved)
        assert h.to_dict() == g.to_dict() and h.phase == saved["row"]["phase"]
        for s in range(4):
            assert np.array_equal(h.observation(s), g.observation(s))
        assert np.array_equal(h.legal_mask(), g.legal_mask())
        r = h.row
        shown |= [r.said.any(), r.xbits.any(), r.mhand.any() and r.dbits.any(), r.sbits.any(), r.voids.any(),
                  r.paid[0] >= 0]
    assert shown.all()


def test_OTT_5_5_a_state_saved_with_M_hand_twice_still_loads_and_must_agree():
    """States saved before 2026-12-04's fifth session held M(hand) (OTT-5.5) three times: as every seat's
    ``declarable4``, as the declarer's card set ``mbits`` and as 62 bools ``declarable``; those of 2026-12-04 the
    first two. Such a state loads as the same game; one whose copies disagree is refused."""
    saved, g = next((d, g) for d, g in _saved_games() if d["row"]["phase"] == Phase.DECLARE)
    d = json.loads(json.dumps(saved))
    assert d["row"]["mbits"]  # a nonempty M(hand)
    d["row"]["declarable"] = [bool(d["row"]["mbits"] >> c & 1) for c in range(62)]
    assert OttocentoGame.from_dict(d).to_dict() == g.to_dict()
    d["row"]["declarable"][d["row"]["declarable"].index(True)] = False
    with pytest.raises(ValueError, match="'declarable' disagrees with its 'mbits'"):
        OttocentoGame.from_dict(d)
    d = json.loads(json.dumps(saved))
    d["row"]["mbits"] &= d["row"]["mbits"] - 1  # one card of M(hand) fewer than declarable4 holds
    with pytest.raises(ValueError, match="'mbits' disagrees with its 'declarable4'"):
        OttocentoGame.from_dict(d)


def test_same_seed_same_game_and_json_round_trip_continues_identically():
    rng = np.random.default_rng(0)
    for seed in range(15):
        g = game(seed=seed, ott_signal_players="all")
        for _ in range(int(rng.integers(1, 150))):
            if g.game_over:
                break
            random_step(g, rng)
        h = OttocentoGame.from_dict(json.loads(json.dumps(g.to_dict())))
        c = g.clone()
        while not g.game_over:
            for other in (h, c):
                assert np.array_equal(other.legal_mask(), g.legal_mask())
                for s in range(4):
                    assert np.array_equal(other.observation(s), g.observation(s))
                assert np.array_equal(other.state_vector(), g.state_vector())
            a = random_step(g, rng)
            h.apply(a), c.apply(a)
        assert h.history == g.history == c.history and h.winner == g.winner
        assert np.array_equal(h.next_game().hands, g.next_game().hands)


def test_clone_is_independent():
    g = _to_play(seed=2)
    c = g.clone()
    c.apply(c.legal_actions()[0])
    assert g.trick == [] and len(c.trick) == 1
    assert not any(np.shares_memory(x, c.row.arrays()[k]) for k, x in g.row.arrays().items())


def test_bad_input_raises_and_changes_nothing_in_every_phase():
    g = game(seed=0, dealer=0)
    rng = np.random.default_rng(0)
    seen = set()
    while not g.game_over and len(seen) < 4:
        seen.add(g.phase)
        before = json.dumps(g.to_dict())
        bad = next(a for a in range(NUM_ACTIONS) if not g.legal_mask()[a])
        with pytest.raises(ValueError, match=f"illegal action {bad}.*{g.phase.name}.*legal now:"):
            g.apply(bad)
        for b in (NUM_ACTIONS, -1, 2.5, "x", None):
            with pytest.raises(ValueError):
                g.apply(b)
        assert json.dumps(g.to_dict()) == before
        random_step(g, rng)
    assert seen == {Phase.A_MONTE, Phase.DISCARD, Phase.DECLARE, Phase.PLAY}
    with pytest.raises(ValueError, match="62 cards once each"):
        g.set_hands(0, [list(range(15))] * 4)
    with pytest.raises(ValueError, match="over"):
        gg = game(max_hands=1)
        for _ in range(4):
            gg.apply(A_MONTE)
        gg.apply(0)


def test_bad_options_are_rejected_by_name():
    with pytest.raises(ValueError, match="ott_signal_players"):
        make_config(OttocentoConfig, {"ott_signal_players": "partner"})
    with pytest.raises(ValueError, match="suit_min_natural"):
        make_config(OttocentoConfig, {"suit_min_natural": 4})
    with pytest.raises(ValueError, match="unknown option"):
        make_config(OttocentoConfig, {"target": 500})


def test_layouts_are_the_documented_sizes():
    assert OBS.size == 1558 and STATE.size == 1804
    g = game(seed=0)
    assert g.observation(0).shape == (1558,) and g.state_vector().shape == (1804,)


# --- the remaining clauses and decisions (OTT-6.2, OTT-9.2, C.12 O-11, O-12) -----------------------

def test_OTT_6_2_no_calling_out_priority_the_higher_total_wins_even_against_the_dealers_team():
    # Barilli's "chiamarsi fuori" would let the dealer's team (0) claim first; the seed rule does not
    g = deal(0, {1: "KD KC KS", 0: "QD QC QS"})
    g.row.scores[0] = [795, 790]
    discard(g)
    _declare_kings(g, {1: "KD KC KS", 0: "QD QC QS"})
    assert g.scores.tolist() == [809, 807] and g.winner == 0
    g = deal(0, {1: "KD KC KS KB", 0: "QD QC QS"})
    g.row.scores[0] = [795, 790]
    discard(g)
    _declare_kings(g, {1: "KD KC KS KB", 0: "QD QC QS"})
    assert g.scores.tolist() == [809, 824] and g.winner == 1


def test_OTT_9_2_one_piles_card_points_determine_the_others():
    rng = np.random.default_rng(0)
    for _ in range(200):
        pile = np.zeros(N, dtype=bool)
        pile[rng.choice(N, size=2 * int(rng.integers(0, 32)), replace=False)] = True
        assert card_points(pile) + card_points(~pile) == 87


LEAD_HANDS = {
    1: "6D 7D 8D 9D 10D T10 T9 T16 T7 T6 T5 Moor1 Moor2 Moor3 Moor4 Begato 6B",  # the dealer
    2: "QD CD JD AD Matto T8 Angel World Sun Moon T15 T14 T13 T12 T11",  # eldest
    3: "KC QC CC JC AC 6C 7C 8C 9C 10C KB QB CB JB AB",
    0: "KD KS QS CS JS 10S 9S 8S 7S 6S AS 10B 9B 8B 7B",
}


def test_C_12_O_11_after_a_matto_lead_the_next_card_fixes_the_suit():
    g = deal(1, LEAD_HANDS)
    discard(g, "6B T5")
    declare_nothing(g)
    assert g.current == 2
    g.apply(MATTO)
    assert np.array_equal(g.legal_mask()[:N], g.hands[3])  # nothing to follow yet
    g.apply(P.parse("KB"))
    assert P.names_of(g.legal_mask()[:N]) == ["10B", "9B", "8B", "7B"]  # batons now
    g.apply(P.parse("7B"))
    assert (P.suit[np.flatnonzero(g.legal_mask()[:N])] == 4).all()  # no batons: trump
    g.apply(P.parse("T6"))
    assert g.tricks[-1][1] == 1 and not g.won[1, MATTO] and g.won[0, MATTO]  # Matto to its owner


def test_C_12_O_12_no_obligation_to_overtrump():
    g = deal(1, LEAD_HANDS)
    discard(g, "6B T5")
    declare_nothing(g)
    g.apply(P.parse("T8"))
    g.apply(P.parse("KC"))
    g.apply(P.parse("KD"))
    legal = P.names_of(g.legal_mask()[:N])
    assert {"T16", "T10", "T9", "T7", "T6", "Moor1", "Begato"} <= set(legal)  # lower trumps too


# --- v2: the combination values of the won piles (issue #12; B.5, C.9, public by H.1) ----------------

def _bits(cards) -> np.uint64:
    return np.uint64(sum(1 << int(c) for c in cards))


def _gains(pile0, pile1, mdc=True, smn=2):
    gains, points = np.zeros((2, N), np.int64), np.zeros(2, np.int64)
    combos.combo_gains(_bits(pile0), _bits(pile1), mdc, smn, combos.combo_tables(), gains, points)
    return gains, points


def test_B_5_1_combo_gain_worked_example_the_fourth_king_adds_17_and_a_lone_queen_nothing():
    # my pile KD KC KS: a cricca of 3 Kings, 17 (B.5.1); the fourth King makes it 34
    gains, points = _gains(ids("KD KC KS 6D"), ids("Angel World"))
    assert points.tolist() == [17, 0]
    assert gains[0, ids("KB")[0]] == 17
    assert gains[0, ids("QD")[0]] == 0  # K Q: two cards of a suit chain score nothing (B.5.3.1)
    assert gains[0, ids("7C")[0]] == 0  # outside every family
    # the other pile: Angel World + the Begato = Tarocchi cricca of 3 (18) and a Grande of 3 (10)
    assert gains[1, ids("Begato")[0]] == 18 + 10
    assert gains[1, ids("KB")[0]] == 0
    # a card already won, by either side, adds nothing to anyone
    assert gains[:, ids("KD")[0]].tolist() == [0, 0] and gains[:, ids("Angel")[0]].tolist() == [0, 0]


@pytest.mark.parametrize("mdc,smn", [(True, 2), (False, 2), (True, 3), (False, 3)])
def test_B_5_combo_gains_are_exactly_what_each_card_adds_to_either_pile(mdc, smn):
    # combo_points(pile + c) - combo_points(pile) for every card, scored one by one (no shortcut):
    # FAMILY_PARTNERS only skips cards that cannot add anything, and nothing is ever negative
    rng = np.random.default_rng(12)
    for _ in range(120):
        cards = rng.permutation(N)
        n0, n1 = rng.integers(0, 30, size=2)
        p0, p1 = cards[:n0], cards[n0:n0 + n1]
        gains, points = _gains(p0, p1, mdc, smn)
        for i, pile in enumerate((p0, p1)):
            base = combos.combo_points(pile, moors_double_count=mdc, suit_min_natural=smn)
            assert points[i] == base
            for c in range(N):
                want = 0 if c in p0 or c in p1 else combos.combo_points(
                    [*pile, c], moors_double_count=mdc, suit_min_natural=smn) - base
                assert gains[i, c] == want >= 0


def test_C_9_observation_v2_sections_value_the_public_piles_for_my_team_and_the_other():
    g = game(seed=3)
    rng = np.random.default_rng(3)
    seen = 0
    while not g.game_over and seen < 40:
        if g.phase == Phase.PLAY and g.won.any():
            obs = [g.observation(s) for s in range(4)]
            gains, points = _gains(np.flatnonzero(g.won[0]), np.flatnonzero(g.won[1]))
            for s in range(4):
                mine, other = s % 2, 1 - s % 2
                o = obs[s]
                assert o[OBS.pile_combos].tolist() == pytest.approx([points[mine] / 100, points[other] / 100])
                assert np.allclose(o[OBS.combo_gain].reshape(2, N), gains[[mine, other]] / 100)
            # partners see the same values; opponents see them the other way round
            assert np.array_equal(obs[0][OBS.combo_gain], obs[2][OBS.combo_gain])
            flip = obs[1][OBS.combo_gain].reshape(2, N)[::-1].reshape(-1)
            assert np.array_equal(obs[0][OBS.combo_gain], flip)
            seen += 1
        g.apply(int(rng.choice(np.flatnonzero(g.legal_mask()))))
    assert seen == 40
