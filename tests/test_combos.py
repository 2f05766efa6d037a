"""Tests of the B.5 combination scoring (tarot_env/rules/combos.py).

Each test is named after the RULES.md clause it checks. The worked examples (B.5.6, C.11, D.7)
are rebuilt card by card from the text.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tarot_env.cards import BOLOGNESE as B
from tarot_env.rules import combos as C
from tarot_env.rules.combos import (
    ACES,
    CRICCA_FAMILIES,
    GRANDE,
    IN_FAMILY,
    MOORS,
    NUM_CARDS,
    SUIT_CHAINS,
    ComboBreakdown,
    combo_breakdown,
    combo_gains,
    combo_points,
    combo_tables,
    evaluate_many,
    is_scoring_declaration,
    pile_gains_kept,
    popcount,
    scoring_cards,
)

ALL = frozenset(range(B.size))
PIPS = frozenset(c for c in range(B.size) if B.name(c)[:-1] in {"6", "7", "8", "9", "10"})


def S(text: str) -> list[int]:
    """Card ids of a space-separated list of names."""
    return B.parse_many(text)


def names(cards) -> str:
    return " ".join(B.name(c) for c in cards)


def seq_points(bd: ComboBreakdown) -> dict[str, int]:
    """Undoubled points of each scoring sequence family."""
    return {s.family: s.points for s in bd.sequences}


def cricca_points(bd: ComboBreakdown) -> dict[str, int]:
    return {c.family: c.points for c in bd.cricche}


def card_points(pile) -> int:
    """B.3.2: Σ value − |pile| / 2."""
    pile = list(pile)
    return int(B.value[pile].sum()) - len(pile) // 2


def trumps(lo: int, hi: int) -> str:
    """Names of the numbered trumps hi..lo, e.g. trumps(5, 13) = 'T13 T12 … T5'."""
    return " ".join(f"T{r}" for r in range(hi, lo - 1, -1))


# ---------------------------------------------------------------------------------------------
# B.5.6 verification examples
# ---------------------------------------------------------------------------------------------

PISARRI3_PILE_A = S("World Sun T16 Begato KD JD AD QS CS JS JC CB AB")


def test_B_5_6_pisarri_example3_pile_B_181():
    pile_b = ALL - set(PISARRI3_PILE_A)
    assert len(PISARRI3_PILE_A) == 13 and len(pile_b) == 49
    bd = combo_breakdown(pile_b)
    # "Il criccone non v'è": Kings 3 (17) + Queens 3 (14) = 31, not doubled
    assert cricca_points(bd) == {"Kings": 17, "Queens": 14}
    assert not bd.criccone and bd.cricche_total == 31
    # Moors 4+Matto = 20, Aces 2+Matto = 10, Batons 15, Cups 20, Grande 10 → 75, ×2 = 150
    assert seq_points(bd) == {"Moors": 20, "Aces": 10, "Batons": 15, "Cups": 20, "Grande": 10}
    assert bd.sequences_doubled and bd.sequence_total == 150
    assert bd.total == 181 == combo_points(pile_b)
    # Pisarri's shorthand "k di X" is the doubled value / 10: 4 Mori, 2 d'Asso, 3 di bastoni,
    # 4 di coppe, 2 di Grande.
    shorthand = {s.family: 2 * s.points // 10 for s in bd.sequences}
    assert shorthand == {"Moors": 4, "Aces": 2, "Batons": 3, "Cups": 4, "Grande": 2}
    grande = next(s for s in bd.sequences if s.family == "Grande")
    # Angel, [World skip], [Sun ← Matto], Moon, then 16 missing = stop
    assert names(grande.cards) == "Angel Matto Moon" and grande.length == 3
    # C.12 O-2 / O-4: 181 under every flag setting. suit_min_natural binds the suits only (this
    # Grande has the Matto among its first three), and the Grande stops before the Moors.
    for smn in (2, 3):
        for mdc in (True, False):
            assert combo_points(pile_b, suit_min_natural=smn, moors_double_count=mdc) == 181, (smn, mdc)
            assert combo_breakdown(pile_b, suit_min_natural=smn, moors_double_count=mdc) == bd


def test_B_5_6_pisarri_example3_angel_matto_not_a_cricca():
    # B.5.1 [DERIVED from Pisarri ex. 3]: pile B holds Angel + Matto, which is not a cricca.
    pile_b = ALL - set(PISARRI3_PILE_A)
    assert "Tarocchi" not in cricca_points(combo_breakdown(pile_b))
    assert combo_points(S("Angel Matto")) == 0


def test_B_5_6_pisarri_example3_ace_counts_in_suit_and_in_aces():
    # B.5.3.7: the Ace of cups counts both in the Cups sequence and in the Aces sequence.
    bd = combo_breakdown(ALL - set(PISARRI3_PILE_A))
    ac = B.parse("AC")
    in_families = {s.family for s in bd.sequences if ac in s.cards}
    assert in_families == {"Cups", "Aces"}


def test_B_5_6_pisarri_example2_428():
    # A hand rebuilt from Pisarri's tally: "Criccone 15, e 5 d'asso fa 20, e 4 a bastoni 24, e 5
    # a denari 29, e 6 a spade 35, e 7 di Grande 42 … il giuoco sarà 428". Pisarri gives only the
    # tally. This hand has exactly those combinations: Criccone 158 = 2 × (36+17+14+12).
    hand = S(
        "Angel World Sun Moon T16 T15 Begato Matto "
        "AD AC AS AB  KS QS CS JS  KD QD JD  KB QB  JC"
    )
    bd = combo_breakdown(hand)
    assert cricca_points(bd) == {"Tarocchi": 36, "Kings": 17, "Queens": 14, "Jacks": 12}
    assert bd.criccone and bd.cricche_total == 158
    doubled = {s.family: 2 * s.points for s in bd.sequences}
    assert doubled == {"Aces": 50, "Batons": 40, "Coins": 50, "Swords": 60, "Grande": 70}
    lengths = {s.family: s.length for s in bd.sequences}
    assert lengths == {"Aces": 6, "Batons": 5, "Coins": 6, "Swords": 7, "Grande": 8}
    # the running tally in tens: 15, 20, 24, 29, 35, 42
    running, tally = bd.cricche_total // 10, []
    tally.append(running)
    for fam in ("Aces", "Batons", "Coins", "Swords", "Grande"):
        running += doubled[fam] // 10
        tally.append(running)
    assert tally == [15, 20, 24, 29, 35, 42]
    assert bd.total == combo_points(hand) == 428


def test_B_5_6_computo_ordinario_broken_grande_40():
    # The opponents hold Sun, 15, 12 and 10. The Angel side holds the other trumps and both
    # contatori: Angel, World, [Sun skip], Moon, 16, [15 ← Bégato], 14, 13, [12 ← Matto], 11,
    # then the 10 is missing: stop. 9 cards → 40.
    opponents = set(S("Sun T15 T12 T10"))
    angel_side = [c for c in range(B.size) if B.suit[c] == 4 and c not in opponents] + S("Matto")
    bd = combo_breakdown(angel_side)
    grande = next(s for s in bd.sequences if s.family == "Grande")
    assert grande.points == 40 and grande.length == 9
    assert names(grande.cards) == "Angel World Moon T16 Begato T14 T13 Matto T11"
    # "105 − 5 × (scavezzo number + missing cards above it)": the 10 breaks; Sun, 15, 12 missing
    assert grande.points == 105 - 5 * (10 + 3)


def test_B_5_6_and_B_5_4_2_full_grande_105():
    # 20 natural cards (Angel … 5, four Moors) + Bégato + Matto = 22 cards → 105
    all_trumps = [c for c in range(B.size) if B.suit[c] == 4]
    assert len(all_trumps) == 21
    bd = combo_breakdown(all_trumps + S("Matto"))
    grande = next(s for s in bd.sequences if s.family == "Grande")
    assert grande.length == 22 and grande.points == 105
    assert names(grande.cards[-6:]) == "Moor1 Moor2 Moor3 Moor4 Begato Matto"


# ---------------------------------------------------------------------------------------------
# B.5.4.2 maxima
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suit", ["D", "C", "S", "B"])
def test_B_5_4_2_suit_maximum_30(suit):
    cards = S(" ".join(r + suit for r in "KQCJA") + " Begato Matto")
    suit_seq = combo_breakdown(cards).sequences[0]
    assert (suit_seq.length, suit_seq.points) == (7, 30)
    assert names(suit_seq.cards) == " ".join(r + suit for r in "KQCJA") + " Begato Matto"


def test_B_5_4_2_aces_and_moors_maximum_25():
    assert seq_points(combo_breakdown(S("AD AC AS AB Begato Matto")))["Aces"] == 25
    assert seq_points(combo_breakdown(S("Moor1 Moor2 Moor3 Moor4 Begato Matto")))["Moors"] == 25


def test_B_5_4_2_criccone_maximum_296():
    all_cricca_cards = [c for f in CRICCA_FAMILIES for c in f.cards]
    bd = combo_breakdown(all_cricca_cards)
    assert sum(c.points for c in bd.cricche) == 148  # Barilli's "Mezzo Criccone (148)"
    assert bd.criccone and bd.cricche_total == 296


def test_B_5_4_2_whole_deck():
    # Derived here (not printed in RULES.md): with every card in one set the cricche give 296.
    # The sequences are Grande 105 + 4 suits × 30 + Aces 25 + Moors 25 = 275, doubled to 550.
    bd = combo_breakdown(ALL)
    assert bd.cricche_total == 296 and bd.sequence_total == 550 and bd.total == 846
    # with moors_double_count off (B.5.3.7, decision 3) each Moor counts once. All four in the Grande
    # would give 105 + 120 + 25 = 250 (6 sequences); two of them in the Moors family with both
    # contatori scores more: Grande 95 (20 cards) + Moors 15 (Moor1 Moor2 + 2 contatori) = 255
    assert combo_points(ALL, moors_double_count=False) == 296 + 2 * 255
    off = combo_breakdown(ALL, moors_double_count=False)
    assert seq_points(off)["Grande"] == 95 and seq_points(off)["Moors"] == 15
    moors = next(s for s in off.sequences if s.family == "Moors")
    assert names(moors.cards) == "Moor1 Moor2 Begato Matto"


# ---------------------------------------------------------------------------------------------
# C.11 Ottocento worked example
# ---------------------------------------------------------------------------------------------

# Plain pips never belong to a combination (B.5.1, B.5.2), so any split of the 20 pips works. A
# gets all ten coins and cups pips plus 6S and 7S (12), and B gets the other eight.
C11_PIPS_A = S("6D 7D 8D 9D 10D 6C 7C 8C 9C 10C 6S 7S")
C11_PIPS_B = S("8S 9S 10S 6B 7B 8B 9B 10B")
C11_PILE_A = S(
    "Angel World Begato KD KC KS QD QB CC JD JC JS JB "  # 13 counting cards
    "Sun Moon T16 T15 T14 AD AC Moor1 Moor2"  # 9 named scartini
) + C11_PIPS_A
C11_PILE_B = S(
    "Matto KB QC QS CD CS CB " + trumps(5, 13) + " Moor3 Moor4 AS AB"
) + C11_PIPS_B


def test_C_11_piles_partition_the_deck_and_card_points():
    assert len(C11_PILE_A) == 34 and len(C11_PILE_B) == 28
    assert set(C11_PILE_A) | set(C11_PILE_B) == ALL
    assert set(C11_PIPS_A) | set(C11_PIPS_B) == PIPS
    assert card_points(C11_PILE_A) == 53 and card_points(C11_PILE_B) == 34


def test_C_11_pile_A_cricche_118_sequences_210():
    bd = combo_breakdown(C11_PILE_A)
    assert cricca_points(bd) == {"Tarocchi": 18, "Kings": 17, "Jacks": 24}
    assert bd.criccone and bd.cricche_total == 118
    seqs = {s.family: (names(s.cards), s.length, s.points) for s in bd.sequences}
    assert seqs == {
        "Grande": ("Angel World Sun Moon T16 T15 T14 Begato", 8, 35),  # [13 ← Bégato], 12 stops
        "Coins": ("KD QD JD AD Begato", 5, 20),  # K, Q, [C skip], J, A + Bégato
        "Cups": ("KC CC JC AC Begato", 5, 20),  # K, [Q skip], C, J, A + Bégato
        "Swords": ("KS Begato JS", 3, 10),  # K, [Q skip], [C ← Bégato], J; no Ace
        "Aces": ("AD AC Begato", 3, 10),
        "Moors": ("Moor1 Moor2 Begato", 3, 10),
    }
    assert bd.sequences_doubled and bd.sequence_total == 210
    assert combo_points(C11_PILE_A) == 118 + 210


def test_C_11_pile_B_cricche_13_sequences_70():
    bd = combo_breakdown(C11_PILE_B)
    assert cricca_points(bd) == {"Cavaliers": 13}
    assert not bd.criccone and bd.cricche_total == 13
    seqs = {s.family: (names(s.cards), s.length, s.points) for s in bd.sequences}
    assert seqs == {
        "Batons": ("KB CB Matto AB", 4, 15),  # K, [Q skip], C, [J ← Matto], A
        "Aces": ("AS AB Matto", 3, 10),
        "Moors": ("Moor3 Moor4 Matto", 3, 10),
    }
    assert bd.sequences_doubled and bd.sequence_total == 70
    assert combo_points(C11_PILE_B) == 13 + 70


def test_C_11_declarations_and_hand_totals_398_133():
    decl_a = combo_points(S("KD KC KS"))  # three of his four Kings
    decl_b = combo_points(S("Moor3 Moor4 Matto"))
    assert (decl_a, decl_b) == (17, 10)
    assert is_scoring_declaration(S("KD KC KS")) and is_scoring_declaration(S("Moor3 Moor4 Matto"))
    total_a = decl_a + combo_points(C11_PILE_A) + card_points(C11_PILE_A)
    total_b = decl_b + combo_points(C11_PILE_B) + card_points(C11_PILE_B) + 6  # last trick
    assert (total_a, total_b) == (398, 133)


def test_C_11_describe_lines():
    text = str(combo_breakdown(C11_PILE_A))
    lines = text.splitlines()
    assert "Kings x3: KD KC KS = 17" in lines
    assert "Criccone (3 cricche): 59 x 2 = 118" in lines
    assert "Grande x8: Angel World Sun Moon T16 T15 T14 Begato = 35" in lines
    assert "Sequences doubled (6 sequences): 105 x 2 = 210" in lines
    assert lines[-1] == "Total = 328"
    assert combo_breakdown(C11_PILE_A).describe(B) == text
    assert str(combo_breakdown(S("6D 7D"))) == "No combinations = 0"


# ---------------------------------------------------------------------------------------------
# D.7 Millone worked example
# ---------------------------------------------------------------------------------------------

# N's pile: the ten cards named in D.7, then cards that form no further combination, chosen so
# that Σ value = 64 over 32 cards. No King, Queen or Cavalier reaches three, and KD has no second
# natural coin. T14 and T13 are both missing, so the Grande (Matto filling the 14) stops at the
# 13. There are no Aces or Moors.
D7_NAMED = S("Angel World Sun Moon T16 T15 Matto KC QC CC")
D7_PILE_N = D7_NAMED + S("KD QS CS JS JB " + trumps(5, 12) + " 6D 7D 8D 9D 10D 6C 7C 8C 9C")
D7_PILE_D = sorted(ALL - set(D7_PILE_N))


def test_D_7_millone_N_pile_combos_63():
    assert len(D7_PILE_N) == 32 and len(D7_PILE_D) == 30
    assert int(B.value[D7_PILE_N].sum()) == 64 and int(B.value[D7_PILE_D].sum()) == 54
    assert card_points(D7_PILE_N) == 48 and card_points(D7_PILE_D) == 39
    bd = combo_breakdown(D7_PILE_N)
    assert seq_points(bd) == {"Grande": 30, "Cups": 15}  # 6 natural + Matto; K Q C + Matto
    assert cricca_points(bd) == {"Tarocchi": 18}  # Angel, World, Matto
    assert not bd.sequences_doubled and not bd.criccone
    assert bd.total == combo_points(D7_PILE_N) == 63
    assert card_points(D7_PILE_N) + bd.total == 111


def test_D_7_millone_D_pile_derived():
    # Derived here (D.7 leaves D's combinations open). With this N pile, D holds the Bégato, all
    # four Aces, all four Moors and KB QB CB (no JB). That gives Batons K Q C [J ← Bégato] A = 20,
    # Aces 4 + Bégato = 20 and Moors 4 + Bégato = 20, three sequences doubled to 120. No cricca.
    bd = combo_breakdown(D7_PILE_D)
    assert seq_points(bd) == {"Batons": 20, "Aces": 20, "Moors": 20}
    assert bd.cricche == () and bd.total == 120


# ---------------------------------------------------------------------------------------------
# B.5.1 cricche
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "family, v3, v4",
    [("Tarocchi", 18, 36), ("Kings", 17, 34), ("Queens", 14, 28), ("Cavaliers", 13, 26), ("Jacks", 12, 24)],
)
def test_B_5_1_cricca_table(family, v3, v4):
    fam = next(f for f in CRICCA_FAMILIES if f.name == family)
    assert cricca_points(combo_breakdown(fam.cards[:2])) == {}
    assert cricca_points(combo_breakdown(fam.cards[:3])) == {family: v3}
    assert cricca_points(combo_breakdown(fam.cards[1:])) == {family: v3}
    assert cricca_points(combo_breakdown(fam.cards)) == {family: v4}


def test_B_5_1_contatori_not_wild_in_cricche():
    # two Kings + both contatori: no Kings cricca, and no sequence (only 1 natural per suit)
    assert combo_points(S("KD KC Begato Matto")) == 0
    assert combo_points(S("QD QC Matto")) == 0
    # …but Bégato and Matto are natural members of the Tarocchi cricca (B.1.4)
    assert cricca_points(combo_breakdown(S("World Begato Matto"))) == {"Tarocchi": 18}


def test_B_5_1_1_criccone_exactly_2_not_doubled_3_doubled():
    two = combo_breakdown(S("KD KC KS QD QC QB"))  # Kings 17 + Queens 14
    assert not two.criccone and two.cricche_total == 31
    three = combo_breakdown(S("KD KC KS QD QC QB JD JC JS JB"))  # + Jacks 24
    assert three.criccone and three.cricche_total == 2 * (17 + 14 + 24)


@given(st.data())
def test_B_5_1_1_criccone_threshold_property(data):
    fams = data.draw(st.lists(st.sampled_from(CRICCA_FAMILIES), min_size=1, max_size=5, unique=True))
    cards, expected = [], 0
    for f in fams:
        chosen = data.draw(st.lists(st.sampled_from(f.cards), min_size=3, max_size=4, unique=True))
        cards += chosen
        expected += f.value4 if len(chosen) == 4 else f.value3
    bd = combo_breakdown(cards)
    assert len(bd.cricche) == len(fams)
    assert bd.criccone == (len(fams) >= 3)
    assert bd.cricche_total == expected * (2 if len(fams) >= 3 else 1)


# ---------------------------------------------------------------------------------------------
# B.5.3 sequence construction
# ---------------------------------------------------------------------------------------------

def test_B_5_3_1_minimum_three_cards():
    assert combo_points(S("KD QD")) == 0
    assert combo_points(S("AD AC")) == 0
    assert combo_points(S("Moor1 Moor2")) == 0
    assert combo_points(S("KD QD CD")) == 10
    assert combo_points(S("KD QD Matto")) == 10  # contatori count towards the 3


def test_B_5_3_2_head_required_no_angel_no_grande():
    assert combo_breakdown(S("World Sun Moon T16 T15 T14 Matto")).sequences == ()
    assert combo_breakdown(S("World Sun Moon T16 T15 T14 Begato Matto")).sequences == ()


def test_B_5_3_2_head_required_no_king_no_suit_sequence():
    assert combo_breakdown(S("QD CD JD Matto")).sequences == ()
    assert combo_breakdown(S("QS CS JS AS Begato Matto")).sequences == ()


def test_B_5_3_2_free_skip_any_one_figure():
    for hand in ("KD QD CD", "KD CD JD", "KD QD JD"):  # Pisarri: "s'accusa"
        assert combo_points(S(hand)) == 10, hand
    assert combo_points(S("Angel Sun Moon")) == 10
    assert combo_points(S("Angel World Moon")) == 10
    assert combo_points(S("Angel World Sun")) == 10


def test_B_5_3_2_free_skip_only_once():
    assert combo_points(S("KD JD AD")) == 0  # Q and C both missing
    assert combo_points(S("KD JD AD Matto")) == 15  # a contatore fills the second gap
    assert combo_points(S("Angel Moon T16")) == 0  # World and Sun both missing
    assert combo_points(S("Angel Sun T16")) == 0  # World skipped, Moon missing: stop
    assert combo_points(S("Angel World Moon T16")) == 15


def test_B_5_3_2_numbered_trumps_no_free_skip():
    # O-3: the 15 missing stops the chain, so the 14 is not counted
    hand = S("Angel World Sun Moon T16 T14")
    bd = combo_breakdown(hand)
    assert seq_points(bd) == {"Grande": 20}
    assert not scoring_cards(hand)[B.parse("T14")]
    assert seq_points(combo_breakdown(hand + S("Matto"))) == {"Grande": 30}  # Matto fills 15


def test_B_5_3_2_re_e_regina_e_asso_not_valid():
    # Pisarri: "non si può accusare Re e Regina solamente… né Re, Regina e Asso"
    assert combo_points(S("KC QC")) == 0
    assert combo_points(S("KC QC AC")) == 0
    assert not is_scoring_declaration(S("KC QC AC"))


def test_B_5_3_3_same_contatore_counts_in_every_sequence():
    bd = combo_breakdown(S("KD QD KC QC AS AB Matto"))
    matto = B.parse("Matto")
    assert seq_points(bd) == {"Coins": 10, "Cups": 10, "Aces": 10}
    assert all(matto in s.cards for s in bd.sequences)
    assert bd.sequences_doubled and bd.total == 60


def test_B_5_3_3_contatore_fills_or_is_appended():
    # appended after a complete chain: +5 each
    assert combo_points(S("KD QD CD JD AD")) == 20
    assert combo_points(S("KD QD CD JD AD Matto")) == 25
    assert combo_points(S("KD QD CD JD AD Begato Matto")) == 30
    # filling: K [Q skip] [C ← Matto] J A
    seq = combo_breakdown(S("KD JD AD Matto")).sequences[0]
    assert names(seq.cards) == "KD Matto JD AD" and seq.length == 4
    # the Bégato fills first; an unused contatore comes last
    seq = combo_breakdown(S("KD QD JD AD Begato Matto")).sequences[0]
    assert names(seq.cards) == "KD QD JD AD Begato Matto" and seq.points == 25


def test_B_5_3_4_at_most_one_contatore_in_the_first_three_cards():
    # A head (or a lone natural) plus both contatori is never a sequence: only 1 natural card.
    assert combo_breakdown(S("KD Begato Matto")).sequences == ()
    assert combo_breakdown(S("AD Begato Matto")).sequences == ()
    assert combo_breakdown(S("Moor2 Begato Matto")).sequences == ()
    # Angel + Bégato + Matto: a Tarocchi cricca, but no Grande
    bd = combo_breakdown(S("Angel Begato Matto"))
    assert bd.sequences == () and bd.total == 18
    # one contatore among the first three is fine
    assert combo_points(S("KD QD Matto")) == 10
    assert combo_points(S("AD AC Begato")) == 10
    assert combo_points(S("Moor1 Moor2 Begato Matto")) == 15
    # Decision 1: the first three cards are the head and the next two chain positions holding a
    # card. Here they are the head and two contatore fills, so nothing scores, even though a
    # second natural card follows (B.5.5's nat >= 2 would accept both, at 15).
    bd = combo_breakdown(S("Angel T16 Begato Matto"))  # Angel [World skip] [Sun] [Moon] 16
    assert bd.sequences == () and bd.total == 18  # the Tarocchi cricca only
    assert combo_points(S("Angel T16 T15 T14 Begato Matto")) == 18  # longer, still invalid
    assert not is_scoring_declaration(S("Angel T16 Begato Matto"))
    # a used free skip is not a card: Angel [World skip] [Sun ← Bégato] Moon is valid (Pisarri
    # ex. 3), and the second contatore then fills or is appended
    assert seq_points(combo_breakdown(S("Angel Moon Begato"))) == {"Grande": 10}
    assert seq_points(combo_breakdown(S("Angel Moon T16 Begato Matto"))) == {"Grande": 20}
    # Angel [World skip] [Sun ← Bégato] Moon [16 ← Matto] 15: one contatore in the first three
    bd = combo_breakdown(S("Angel Moon T15 Begato Matto"))
    grande = next(s for s in bd.sequences if s.family == "Grande")
    assert names(grande.cards) == "Angel Begato Moon Matto T15" and grande.points == 20
    # suits: K [Q skip] [C ← Bégato] J is valid; K [Q skip] [C ← Bégato] [J ← Matto] is not
    assert combo_points(S("KD JD Begato")) == 10
    assert combo_points(S("KD JD AD Begato Matto")) == 20
    assert combo_points(S("KD Begato Matto 6D")) == 0


def test_B_5_3_6_ace_is_not_one_of_the_three_figures():
    # "l'Asso non può servire per terza Figura": K [Q skip] [C ← Bégato] [J ← Matto] A has two
    # contatori among its first three cards, and the Ace after them does not make it valid.
    bd = combo_breakdown(S("KD AD Begato Matto"))
    assert bd.sequences == () and bd.total == 0
    assert not is_scoring_declaration(S("KD AD Begato Matto"))
    # with a second Ace the Aces family scores on its own, the Coins sequence still does not
    bd = combo_breakdown(S("KD AD AC Begato Matto"))
    assert seq_points(bd) == {"Aces": 15}
    # the Ace only lengthens a sequence that is valid by its first three cards
    assert combo_points(S("KD QD AD Matto")) == 15  # K Q [C skip] [J ← Matto] A
    assert combo_points(S("KD QD Matto")) == 10
    # likewise the Moors only lengthen a Grande that is valid by its first three cards (B.5.3.5):
    # Angel [World skip] [Sun ← Bégato] [Moon ← Matto] 16 … 5 + 4 Moors is no Grande at all
    hand = S("Angel " + trumps(5, 16) + " Moor1 Moor2 Moor3 Moor4 Begato Matto")
    bd = combo_breakdown(hand)
    assert seq_points(bd) == {"Moors": 25} and cricca_points(bd) == {"Tarocchi": 18}
    assert bd.total == 43 == combo_points(hand, moors_double_count=False)
    # one natural card among World, Sun and Moon is enough: Angel [World skip] [Sun ← Bégato]
    # Moon 16 … 5, 4 Moors, then the Matto appended = 18 natural + 2 contatori = 20 cards
    assert seq_points(combo_breakdown(hand + S("Moon")))["Grande"] == 5 * 19


def test_B_5_3_5_moors_follow_the_5_only():
    no_five = S("Angel World Sun Moon " + trumps(6, 16) + " Moor1 Moor2 Moor3")
    bd = combo_breakdown(no_five)
    assert seq_points(bd) == {"Grande": 5 * 14, "Moors": 10}  # Grande: 15 cards, stops at 5
    with_five = no_five + S("T5")
    assert seq_points(combo_breakdown(with_five)) == {"Grande": 5 * 18, "Moors": 10}  # 19 cards
    # a contatore can fill the 5 and let the Moors in: 15 + 3 Moors + Matto = 19 cards
    assert seq_points(combo_breakdown(no_five + S("Matto")))["Grande"] == 5 * 18


def test_B_5_3_5_begato_is_never_a_gap():
    # the Bégato is not a chain position: Angel … 5 + Moors without the Bégato is complete
    full = [c for c in range(B.size) if B.suit[c] == 4 and B.name(c) != "Begato"]
    bd = combo_breakdown(full)
    assert seq_points(bd)["Grande"] == 5 * 19  # 20 natural cards
    bd = combo_breakdown(full + S("Begato"))
    assert seq_points(bd)["Grande"] == 5 * 20


def test_B_5_3_6_ace_only_if_figure_chain_unbroken():
    assert combo_points(S("KC QC JC AC")) == 15  # K Q [C skip] J A
    assert combo_points(S("KC QC AC")) == 0  # J missing too: broken before the Ace
    assert combo_points(S("KC QC AC Matto")) == 15  # K Q [C skip] [J ← Matto] A
    bd = combo_breakdown(S("KC QC Moon AC AD AS"))
    # Aces 3 → 10; the Cups chain is broken, so AC counts only in the Aces
    assert seq_points(bd) == {"Aces": 10}


def test_B_5_3_7_moors_double_count_flag():
    hand = S("Angel World Sun Moon " + trumps(5, 16) + " Moor1 Moor2 Matto")
    on = combo_breakdown(hand)
    assert seq_points(on) == {"Grande": 5 * 18, "Moors": 10}  # 16 + 2 Moors + Matto = 19
    assert cricca_points(on) == {"Tarocchi": 18}
    assert on.total == 18 + 90 + 10
    off = combo_breakdown(hand, moors_double_count=False)
    assert seq_points(off) == {"Grande": 90}  # the Moors count in the Grande only
    assert off.total == 18 + 90 == combo_points(hand, moors_double_count=False)
    # …and they still score (in the Grande)
    assert scoring_cards(hand, moors_double_count=False)[B.parse("Moor1")]
    # when the Grande stops before the Moors the flag changes nothing
    short = S("Angel World Sun Moon T16 Moor1 Moor2 Matto")
    assert combo_points(short) == combo_points(short, moors_double_count=False)
    # Aces always count twice (B.5.3.7), whatever the flag
    aces = S("KD QD CD JD AD AC AS")
    assert seq_points(combo_breakdown(aces, moors_double_count=False)) == {"Coins": 20, "Aces": 10}


def test_B_5_3_7_moors_flag_off_the_division_that_scores_most():
    # RULES.md's example: Angel … 6, three Moors, K Q C of coins = 180; adding the 5 gives 190, not
    # 100. With the 5 the Grande reaches the Moors; all three in it (Grande 90 + Coins 10, 2
    # sequences = 100) scores less than three in the Moors family (75 + 10 + 10, 3 sequences, x2).
    base = S("Angel World Sun Moon " + trumps(6, 16) + " Moor1 Moor2 Moor3 KD QD CD")
    assert combo_points(base, moors_double_count=False) == 180 == combo_points(base)
    with_five = base + S("T5")
    bd = combo_breakdown(with_five, moors_double_count=False)
    assert seq_points(bd) == {"Grande": 75, "Coins": 10, "Moors": 10}
    assert bd.total == 190 == combo_points(with_five, moors_double_count=False)
    assert combo_points(with_five) == 2 * (90 + 10 + 10)  # counted twice under the default
    # without the Coins the doubling is out of reach: all three Moors in the Grande (90) beats
    # 75 + 10 = 85. One family may shrink (Moors 10 -> 0) while the total rises (80 -> 90).
    base = S("Angel World Sun Moon " + trumps(6, 16) + " Moor1 Moor2 Moor3")
    before = seq_points(combo_breakdown(base, moors_double_count=False))
    after = seq_points(combo_breakdown(base + S("T5"), moors_double_count=False))
    assert before == {"Grande": 70, "Moors": 10} and after == {"Grande": 90}
    # ties go to the Grande: with one contatore, 2 Moors in the Moors family (Grande - 10, Moors +10)
    # change nothing, so the Moors stay in the Grande
    tie = S("Angel World Sun Moon " + trumps(5, 16) + " Moor1 Moor2 Moor3 Matto")
    assert seq_points(combo_breakdown(tie, moors_double_count=False)) == {"Grande": 5 * 19}
    # with both contatori the split gains 5: the fewest Moors that make the family valid (2) leave
    two = S("Angel World Sun Moon " + trumps(5, 16) + " Moor1 Moor2 Moor3 Begato Matto")
    bd = combo_breakdown(two, moors_double_count=False)
    assert seq_points(bd) == {"Grande": 5 * 18, "Moors": 15}
    grande = next(s for s in bd.sequences if s.family == "Grande")
    assert names(grande.cards) == "Angel World Sun Moon " + trumps(5, 16) + " Moor3 Begato Matto"
    assert bd.total == 36 + 90 + 15 == combo_points(two, moors_double_count=False)  # Tarocchi x4


def test_C_12_O_2_suit_min_natural_flag():
    for hand, v2, v3 in [
        ("KD QD Matto", 10, 0),  # 2 natural
        ("KD QD CD", 10, 10),
        ("KD QD JD Matto", 15, 15),
        ("KD QD AD Matto", 15, 0),  # K Q [C skip] [J ← Matto] A: the Ace is not a figure
        ("KD QD JD AD Matto", 20, 20),  # K Q [C skip] J A + Matto
        ("KD CD JD AD", 15, 15),
        ("KD JD AD Matto", 15, 0),  # K [Q skip] [C ← Matto] J A
        # O-2 binds the four suits only: the Grande keeps 2 natural cards among its first three
        ("Angel Moon Matto", 10, 10),  # Angel [World skip] [Sun ← Matto] Moon
        ("Angel World Matto", 10 + 18, 10 + 18),  # and the Tarocchi cricca
        ("Angel T16 Begato Matto", 18, 18),  # two contatori among its first three: never
        ("Angel World Sun", 10, 10),
        ("AD AC Matto", 10, 10),  # Aces / Moors: always 2 naturals (decision 2)
        ("Moor1 Moor2 Begato Matto", 15, 15),
    ]:
        assert combo_points(S(hand), suit_min_natural=2) == v2, hand
        assert combo_points(S(hand), suit_min_natural=3) == v3, hand
        assert combo_breakdown(S(hand), suit_min_natural=3).total == v3, hand
    with pytest.raises(ValueError):
        combo_points(S("KD"), suit_min_natural=4)


# ---------------------------------------------------------------------------------------------
# B.5.4 value and B.5.4.1 sequence doubling
# ---------------------------------------------------------------------------------------------

def test_B_5_4_value_is_5_per_card_after_the_first():
    cards = S("KB QB CB JB AB Begato Matto")
    for n in range(3, 8):
        assert combo_points(cards[:n]) == 5 * (n - 1)


def test_B_5_4_1_two_sequences_not_doubled_three_doubled():
    two = combo_breakdown(S("KD QD CD KC QC CC"))
    assert len(two.sequences) == 2 and not two.sequences_doubled and two.sequence_total == 20
    three = combo_breakdown(S("KD QD CD KC QC CC Moor1 Moor2 Moor3"))
    assert len(three.sequences) == 3 and three.sequences_doubled and three.sequence_total == 60


def test_B_5_4_1_doublings_are_independent():
    # "se non vi fossero che due Sequenze e vi fosse Criccone, allora si raddoppiano solamente
    # li punti del Criccone"
    bd = combo_breakdown(S("KD KC KS QD QC QB JD JC JB"))
    assert bd.criccone and not bd.sequences_doubled
    assert seq_points(bd) == {"Coins": 10, "Cups": 10}
    assert bd.total == 2 * (17 + 14 + 12) + 20


# Natural-only sequences of each family. The Grande stops before the 5, so it never takes a Moor.
# A suit of 3 or 4 figures always reaches its Ace position (at most one of Q/C/J is missing), so
# the suit is one card longer when the Aces family put that suit's Ace in the set.
_SEQ_BUILDERS = {
    "Grande": (GRANDE.head, [c for c, _ in GRANDE.chain[:14]], 3, 15),
    **{f.name: (f.head, [c for c, _ in f.chain], 3, 4) for f in SUIT_CHAINS},
    "Aces": (None, list(ACES.cards), 3, 4),
    "Moors": (None, list(MOORS.cards), 3, 4),
}


@given(st.data())
def test_B_5_4_1_sequence_doubling_threshold_property(data):
    fams = data.draw(st.lists(st.sampled_from(sorted(_SEQ_BUILDERS)), min_size=1, max_size=7, unique=True))
    cards, expected = [], {}
    for name in fams:
        head, chain, lo, hi = _SEQ_BUILDERS[name]
        n = data.draw(st.integers(lo, hi))
        cards += ([head] + chain[: n - 1]) if head is not None else chain[:n]
        expected[name] = 5 * (n - 1)
    for f in SUIT_CHAINS:
        if f.name in expected and f.tail[0] in cards:
            expected[f.name] += 5
    bd = combo_breakdown(cards)
    assert seq_points(bd) == expected
    assert bd.sequences_doubled == (len(fams) >= 3)
    assert bd.sequence_total == sum(expected.values()) * (2 if len(fams) >= 3 else 1)


# ---------------------------------------------------------------------------------------------
# Properties on random card sets
# ---------------------------------------------------------------------------------------------

@st.composite
def card_sets(draw):
    """Random subsets of the pack, from sparse (declaration-like) to dense (big piles)."""
    p = draw(st.sampled_from([5, 25, 50, 75, 95]))
    rolls = draw(st.lists(st.integers(0, 99), min_size=B.size, max_size=B.size))
    return frozenset(c for c, r in enumerate(rolls) if r < p)


def reference_combo_points(cards, moors_double_count=True, suit_min_natural=2) -> int:
    """An independent, name-based transcription of B.5.5, with B.5.3.4 / B.5.3.6 validity.

    Each headed sequence is laid out card by card (naturals, contatore fills, tail, then the
    unused contatori), and its first three cards must hold ``suit_min_natural`` natural cards (a
    suit; the Grande always 2, O-2). With ``moors_double_count`` off and a Grande that reaches the
    Moors, every division of the Moors between it and the Moors family is tried (B.5.3.7).
    """
    held = {B.name(c) for c in cards}
    cricche, n_cricche = 0, 0
    for members, v3, v4 in [
        ("Angel World Begato Matto", 18, 36), ("KD KC KS KB", 17, 34), ("QD QC QS QB", 14, 28),
        ("CD CC CS CB", 13, 26), ("JD JC JS JB", 12, 24),
    ]:
        m = len(held & set(members.split()))
        if m >= 3:
            n_cricche += 1
            cricche += v4 if m == 4 else v3
    if n_cricche >= 3:
        cricche *= 2
    k = len(held & {"Begato", "Matto"})
    moors = {"Moor1", "Moor2", "Moor3", "Moor4"}

    def set_value(m):  # Aces / Moors: m >= 2 naturals and n >= 3
        n = m + k
        return 5 * (n - 1) if n >= 3 and m >= 2 else 0

    def chain(head, skippable, unskippable, tail):
        """(value, complete): the sequence as a list of True (natural) / False (contatore)."""
        if head not in held:
            return 0, False
        laid, fill, skip, complete = [True], k, 1, True
        for group, can_skip in ((skippable, True), (unskippable, False)):
            for c in group:
                if not complete:
                    break
                if c in held:
                    laid.append(True)
                elif can_skip and skip:
                    skip -= 1  # a skipped position is not a card
                elif fill:
                    fill -= 1
                    laid.append(False)
                else:
                    complete = False
        if complete:
            laid += [True] * len(held & tail)
        laid += [False] * fill
        valid = len(laid) >= 3 and sum(laid[:3]) >= need
        return (5 * (len(laid) - 1) if valid else 0), complete

    def doubled(values):
        return sum(values) * (2 if sum(v > 0 for v in values) >= 3 else 1)

    # O-2: suit_min_natural binds the suits; the Grande always needs 2
    need = 2
    grande, grande_complete = chain(
        "Angel", ["World", "Sun", "Moon"], [f"T{r}" for r in range(16, 4, -1)], moors
    )
    need = suit_min_natural
    others = [chain("K" + s, ["Q" + s, "C" + s, "J" + s], [], {"A" + s})[0] for s in "DCSB"]
    others.append(set_value(len(held & {"AD", "AC", "AS", "AB"})))
    m = len(held & moors)
    if moors_double_count or not (grande and grande_complete):
        return cricche + doubled([grande, *others, set_value(m)])
    # B.5.3.7: every division of the Moors between the Grande and the Moors family, the best one
    return cricche + max(doubled([grande - 5 * j, *others, set_value(j)]) for j in range(m + 1))


@settings(max_examples=400)
@given(card_sets(), st.booleans(), st.sampled_from([2, 3]))
def test_B_5_5_matches_reference_pseudocode(cards, moors_double_count, suit_min_natural):
    flags = dict(moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)
    expected = reference_combo_points(cards, **flags)
    assert combo_points(cards, **flags) == expected
    assert combo_breakdown(cards, **flags).total == expected


@settings(max_examples=300)
@given(card_sets(), st.integers(0, B.size - 1), st.sampled_from([2, 3]))
def test_B_5_4_adding_a_card_never_lowers_a_sequence_family(cards, extra, suit_min_natural):
    # under the default moors_double_count=True (with it off one family may shrink, the total never
    # does: test_B_5_3_7_moors_flag_off_the_division_that_scores_most)
    before = combo_breakdown(cards, suit_min_natural=suit_min_natural)
    after = combo_breakdown(cards | {extra}, suit_min_natural=suit_min_natural)
    a = seq_points(after)
    for family, points in seq_points(before).items():
        assert a.get(family, 0) >= points, (family, B.name(extra))
    assert after.total >= before.total


@settings(max_examples=200)
@given(card_sets())
def test_input_ids_vs_bool_array_equivalence(cards):
    ids = sorted(cards)
    mask = np.zeros(B.size, dtype=bool)
    mask[ids] = True
    expected = combo_points(ids)
    assert combo_points(mask) == expected
    assert combo_points(np.array(ids, dtype=np.int64)) == expected
    assert combo_points(set(ids)) == expected
    assert combo_points(iter(ids)) == expected
    assert combo_points(B.mask(ids)) == expected
    assert combo_breakdown(mask) == combo_breakdown(ids)
    # the fast path (scoring_cards) and the detailed path (combo_breakdown) agree on the cards
    for flags in ({}, {"moors_double_count": False}, {"suit_min_natural": 3}):
        bd = combo_breakdown(ids, **flags)
        in_combos = {c for combo in bd.cricche + bd.sequences for c in combo.cards}
        assert set(np.flatnonzero(scoring_cards(ids, **flags)).tolist()) == in_combos
    assert np.array_equal(scoring_cards(mask), scoring_cards(ids))
    assert is_scoring_declaration(mask) == is_scoring_declaration(ids)


@settings(max_examples=300)
@given(card_sets(), st.booleans())
def test_scoring_cards_keep_the_score(cards, moors_double_count):
    flags = dict(moors_double_count=moors_double_count)
    sc = scoring_cards(cards, **flags)
    assert sc.dtype == bool and sc.shape == (B.size,)
    kept = set(np.flatnonzero(sc).tolist())
    assert kept <= cards
    # dropping the cards that score nothing changes nothing, and what remains is a full declaration
    assert combo_points(kept, **flags) == combo_points(cards, **flags)
    assert is_scoring_declaration(kept, **flags) == (combo_points(cards, **flags) > 0)
    assert is_scoring_declaration(cards, **flags) == (bool(kept) and kept == cards)


# ---------------------------------------------------------------------------------------------
# scoring_cards / is_scoring_declaration (OTT-5.2), input checks
# ---------------------------------------------------------------------------------------------

def test_OTT_5_2_scoring_cards_of_pile_A():
    sc = scoring_cards(C11_PILE_A)
    assert not sc[list(C11_PIPS_A)].any()
    assert not sc[B.parse("QB")]  # two Queens, no batons King
    expected_scoring = set(C11_PILE_A) - set(C11_PIPS_A) - {B.parse("QB")}
    assert set(np.flatnonzero(sc).tolist()) == expected_scoring


def test_OTT_5_2_is_scoring_declaration():
    assert is_scoring_declaration(S("KD KC KS"))
    assert not is_scoring_declaration(S("KD KC KS 6D"))  # the 6 scores nothing
    assert not is_scoring_declaration([])
    assert not is_scoring_declaration(S("KD QD"))
    assert is_scoring_declaration(S("KD QD Matto"))
    assert not is_scoring_declaration(S("KD QD Matto"), suit_min_natural=3)
    assert not is_scoring_declaration(S("Angel World Sun Moon T16 T14"))  # the 14 is cut off
    # KS counts in the Kings cricca even though it starts no sequence
    assert is_scoring_declaration(S("KD QD CD KC KS"))


def test_input_validation():
    with pytest.raises(ValueError):
        combo_points([62])
    with pytest.raises(ValueError):
        combo_points([-1])
    with pytest.raises(ValueError):
        combo_points(np.zeros(61, dtype=bool))
    assert combo_points([]) == 0
    assert combo_points(np.zeros(B.size, dtype=bool)) == 0
    assert combo_points([0, 0, 1, 1, 2]) == combo_points([0, 1, 2]) == 10  # a set: repeats ignored


# --- many sets at once (the batched engines) ------------------------------------------------------
def _as_bits(cards) -> int:
    return sum(1 << c for c in cards)


def _structured_sets(rng: np.random.Generator) -> list[int]:
    """Sets that reach deep into the chains: random subsets of a family's cards, with or without the
    contatori and the Moors, plus uniformly random sets of several densities."""
    out = []
    grande = [GRANDE.head] + [c for c, _ in GRANDE.chain]
    extra = list(GRANDE.tail) + S("Begato Matto")
    for _ in range(1500):  # long Grande chains: most of its cards, a few gaps, contatori, Moors
        keep = rng.random(len(grande)) < rng.choice([0.7, 0.85, 0.95])
        out.append(_as_bits([c for c, k in zip(grande, keep) if k] + [c for c in extra if rng.random() < 0.5]))
    for fam in SUIT_CHAINS:  # every subset of a suit's K Q C J A, with each number of contatori
        cards = [fam.head] + [c for c, _ in fam.chain] + list(fam.tail)
        for p in range(1 << len(cards)):
            for cont in ([], S("Begato"), S("Matto"), S("Begato Matto")):
                out.append(_as_bits([c for i, c in enumerate(cards) if p >> i & 1] + cont))
    for density in (0.1, 0.25, 0.4, 0.6, 0.8, 0.95):
        out += [_as_bits(np.flatnonzero(rng.random(B.size) < density)) for _ in range(400)]
    return out


def _evaluate(mask: int, moors_double_count: bool, suit_min_natural: int) -> tuple[int, int]:
    """B.5 in plain Python (B.5.5's greedy walk, ``combos._walk_chain``): ``(combo points, mask of the cards
    that score)``. The reference the tests compare the compiled scorer (``combos.evaluate_bits``) with."""
    # B.5.1 cricche, B.5.1.1 Criccone
    cricche = 0
    n_cricche = 0
    scoring = 0
    for _, fam_mask, v3, v4 in C._CRICCA_TABLE:
        held = mask & fam_mask
        m = held.bit_count()
        if m >= C.CRICCA_MIN_CARDS:
            n_cricche += 1
            cricche += v4 if m == 4 else v3
            scoring |= held
    if n_cricche >= C.DOUBLING_THRESHOLD:
        cricche *= 2

    # B.5.2–B.5.5 sequences
    k = (mask & C._CONTATORI_MASK).bit_count()
    seq = 0
    n_seq = 0
    grande_takes_moors = False
    for i, (head_bit, chain, tail_mask) in enumerate(C._CHAIN_TABLE):
        if not mask & head_bit:
            continue
        nat, first3, counted, complete = C._walk_chain(mask, k, head_bit, chain, tail_mask, None)
        v = C._sequence_value(nat, k, C._chain_min_natural(i, suit_min_natural), first3)
        if v:
            seq += v
            n_seq += 1
            scoring |= counted
            if i == 0 and complete:
                grande_takes_moors = True
    moors_v = 0
    for fam_mask in (C._ACES_MASK, C._MOORS_MASK):
        held = mask & fam_mask
        v = C._sequence_value(held.bit_count(), k, C.SEQUENCE_MIN_NATURAL, held.bit_count())
        if v:
            seq += v
            n_seq += 1
            scoring |= held
            if fam_mask == C._MOORS_MASK:
                moors_v = v
    if grande_takes_moors and not moors_double_count:  # decision 3: each Moor counts once
        seq, n_seq, _ = C._divide_moors(seq, n_seq, moors_v, k)
    # (the scoring cards are those of moors_double_count=True: every Moor counts in the Grande or
    # in the Moors family whichever division is taken, decision 3)
    if n_seq:  # B.5.3.3: every contatore counts in every sequence
        scoring |= mask & C._CONTATORI_MASK
    if n_seq >= C.DOUBLING_THRESHOLD:  # B.5.4.1
        seq *= 2
    return cricche + seq, scoring


@pytest.mark.parametrize("moors_double_count", [True, False])
@pytest.mark.parametrize("suit_min_natural", [2, 3])
def test_B_5_evaluate_many_equals_combo_points_and_scoring_cards_set_by_set(moors_double_count, suit_min_natural):
    """The compiled B.5 scorer (cricche, Criccone, the five chain walks, Aces and Moors, both doublings,
    decisions 1-3), batched and through the one-set functions (card ids or ``bool[62]``), gives every set
    the points and the scoring cards of the plain-Python reference ``_evaluate``."""
    from tarot_env.rules.combos import combo_points_many, evaluate_many

    sets = _structured_sets(np.random.default_rng(5))
    flags = dict(moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)
    points, scoring = evaluate_many(np.array(sets, dtype=np.uint64), **flags)
    for m, p, s in zip(sets, points.tolist(), scoring.tolist()):
        cards = [c for c in range(B.size) if m >> c & 1]
        assert (p, s) == _evaluate(m, moors_double_count, suit_min_natural), names(cards)  # the Python reference
        assert p == combo_points(cards, **flags) == combo_points(np.isin(np.arange(B.size), cards), **flags)
        assert s == _as_bits(np.flatnonzero(scoring_cards(cards, **flags))), names(cards)
    assert (points > 0).sum() > len(sets) // 2 and (points >= 100).any()  # deep chains were scored
    # any shape in, the same shape out; the doubled shapes agree with the flat call
    grid = np.array(sets[:12], dtype=np.uint64).reshape(3, 2, 2)
    assert combo_points_many(grid, **flags).shape == (3, 2, 2)
    assert combo_points_many(grid, **flags).reshape(-1).tolist() == points[:12].tolist()


def test_evaluate_many_refuses_a_bad_suit_min_natural():
    from tarot_env.rules.combos import evaluate_many

    with pytest.raises(ValueError, match="suit_min_natural must be 2 or 3"):
        evaluate_many(np.zeros(3, dtype=np.uint64), suit_min_natural=4)


# --- monotonicity: winning one more card never lowers a pile's combination points ---------------------
def _add_every_card(sets: list[int], flags: dict) -> None:
    """combo_points(S | {c}) >= combo_points(S) for every set S and every card c, and every card that
    scores in S still scores in S | {c} (what OTT-5.5's largest declarable subset M(H) rests on)."""
    from tarot_env.rules.combos import evaluate_many

    bits = np.array(sets, dtype=np.uint64)
    one = np.left_shift(np.uint64(1), np.arange(B.size, dtype=np.uint64))
    before, scoring_before = evaluate_many(bits, **flags)
    after, scoring_after = evaluate_many(bits[:, None] | one[None, :], **flags)  # [n, 62]
    bad = np.argwhere(after < before[:, None])
    assert not len(bad), [(names(c for c in range(B.size) if sets[i] >> c & 1), B.name(int(c)))
                          for i, c in bad[:3]]
    lost = np.argwhere((scoring_before[:, None] & ~scoring_after) != 0)
    assert not len(lost), [(names(c for c in range(B.size) if sets[i] >> c & 1), B.name(int(c)))
                           for i, c in lost[:3]]


@pytest.mark.parametrize("moors_double_count", [True, False])
@pytest.mark.parametrize("suit_min_natural", [2, 3])
def test_B_5_3_7_adding_a_card_never_lowers_the_points_under_every_flag(moors_double_count, suit_min_natural):
    """B.5.3.7 / C.12 O-2, O-4: under the four flag settings, every set plus any card scores at least
    as much: seeded random sets of every density, and long Grande and suit chains with and without
    the contatori and the Moors (``_structured_sets``), each with each of the 62 cards added."""
    flags = dict(moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)
    sets = _structured_sets(np.random.default_rng(17))
    rng = np.random.default_rng(23)
    # chains to the 5 (or one short of it), any Moors, any contatori, a few suit sequences
    grande = [GRANDE.head] + [c for c, _ in GRANDE.chain]
    for _ in range(1500):
        cards = grande[: len(grande) - rng.integers(0, 3)]
        cards = [c for c in cards if rng.random() < 0.97]
        cards += [c for c in list(MOORS.cards) + S("Begato Matto") if rng.random() < 0.5]
        for fam in SUIT_CHAINS:
            if rng.random() < 0.4:
                cards += [fam.head] + [c for c, _ in fam.chain if rng.random() < 0.8]
        cards += [c for c in ACES.cards if rng.random() < 0.3]
        sets.append(_as_bits(cards))
    assert len(sets) > 5000
    _add_every_card(sets, flags)
    # the one-set function agrees on the worked chain of RULES.md B.5.3.7
    base = S("Angel World Sun Moon " + trumps(6, 16) + " Moor1 Moor2 Moor3 KD QD CD")
    for extra in S("T5 Moor4 Begato Matto JD AD"):
        assert combo_points(base + [extra], **flags) >= combo_points(base, **flags) == 180, B.name(extra)



def test_cheapest_card_least_loss_then_order():
    """combos.cheapest_card (OTT-7.3, MIL-4.3): the candidate whose loss costs the fewest points, ties by
    ``order``; on random sets it is the least loss of the whole scorer (``evaluate_many``), then the order."""
    from tarot_env.rules.combos import cheapest_card

    t = combo_tables()
    order = np.arange(B.size)

    def cheapest(pile, cand, order=order, mdc=True):
        return int(cheapest_card(np.uint64(_as_bits(pile)), np.uint64(_as_bits(cand)), order, mdc, 2, t))

    pile = S("KD QD CD JD AD AC AS T5 Moon KC QC CC")
    cand = S("AD AC AS T5 Moon")
    # the Moon and the T5 cost nothing (no Angel), the Aces 55 or 60: the order decides between the two
    assert B.name(cheapest(pile, cand)) == "Moon"  # id 3 < 15
    assert B.name(cheapest(pile, cand, order[::-1].copy())) == "T5"
    assert B.name(cheapest(pile, S("AD AS"))) == "AS"  # 55 < 60
    assert cheapest(pile, []) == -1
    rng = np.random.default_rng(4)
    one = np.left_shift(np.uint64(1), np.arange(B.size, dtype=np.uint64))
    for _ in range(200):
        cards = np.flatnonzero(rng.random(B.size) < 0.5)
        cands = [c for c in cards if rng.random() < 0.3]
        got = cheapest(cards, cands, mdc=False)
        if not cands:
            assert got == -1
            continue
        m = np.uint64(_as_bits(cards))
        base = evaluate_many(np.array([m]), moors_double_count=False)[0][0]
        loss = base - evaluate_many(m & ~one[cands], moors_double_count=False)[0]
        assert got == cands[min(range(len(cands)), key=lambda i: (loss[i], order[cands[i]]))]


def test_combo_tables_are_built_once_and_hold_the_walk_of_every_pattern():
    """The compiled B.5 scorer's tables are built once per process (no file: a build takes about 0.2 s); a
    chain family's row for a pattern and ``k`` contatori is B.5.5's walk (``_walk_chain``) of that pattern."""
    t = combo_tables()
    assert combo_tables() is t
    rng = np.random.default_rng(3)
    for f, (head_bit, chain, _) in enumerate(C._CHAIN_TABLE):
        for p in rng.integers(0, 1 << int(t.chain_len[f]), 300).tolist() + [(1 << int(t.chain_len[f])) - 1]:
            for k in range(3):
                row = t.offset[f] + p * 3 + k
                walk = C._walk_chain(p << int(t.chain_first[f]), k, head_bit, chain, 0, None)
                assert (t.nat[row], t.first3[row], int(t.counted[row]), t.complete[row]) == walk, (f, p, k)


# --- combo_gains: each card's gain from its own families (the observations' combo_gain, v2) -------------
@pytest.mark.parametrize("mdc,smn", [(True, 2), (True, 3), (False, 2), (False, 3)])
def test_B_5_pile_gains_equal_the_whole_scorer_card_by_card(mdc, smn):
    """``combo_gains`` (``pile_gains_kept`` from nothing kept) revalues only the families a card belongs to (then
    the doublings, B.5.1.1, B.5.4.1): on random piles of every size, weighted towards the combination cards,
    each card's gain is exactly ``evaluate_many(pile + card) - evaluate_many(pile)``, and 0 for a card in
    ``taken``."""
    rng = np.random.default_rng(42 + smn + 10 * mdc)
    t = combo_tables()
    weights = np.where(IN_FAMILY, 3.0, 1.0)
    bits = np.left_shift(np.uint64(1), np.arange(NUM_CARDS, dtype=np.uint64))
    two, both = np.zeros((2, NUM_CARDS), dtype=np.int64), np.zeros(2, dtype=np.int64)
    for _ in range(150):
        size = int(rng.integers(0, 45))
        cards = rng.choice(NUM_CARDS, size=size, replace=False, p=weights / weights.sum())
        pile = np.uint64(np.bitwise_or.reduce(bits[cards])) if size else np.uint64(0)
        others = rng.choice(np.setdiff1d(np.arange(NUM_CARDS), cards), size=int(rng.integers(0, 10)), replace=False)
        taken = pile | (np.uint64(np.bitwise_or.reduce(bits[others])) if len(others) else np.uint64(0))
        combo_gains(pile, taken & ~pile, mdc, smn, t, two, both)  # (the second pile: the other cards taken)
        base, gains = both[0], two[0]
        points = evaluate_many(pile | bits, moors_double_count=mdc, suit_min_natural=smn)[0]
        want = evaluate_many(np.array([pile]), moors_double_count=mdc, suit_min_natural=smn)[0][0]
        assert base == want
        free = (taken & bits) == 0
        assert np.array_equal(gains[free], points[free] - want)
        assert not gains[~free].any()


@pytest.mark.parametrize("mdc,smn", [(True, 2), (True, 3), (False, 2), (False, 3)])
def test_B_5_pile_gains_kept_follow_growing_and_shrinking_piles(mdc, smn):
    """``pile_gains_kept`` values again only the families of the cards that came or went (all of them when
    the number of contatori changed, B.5.3.3): along random piles that grow by a trick at a time, lose a
    card now and then (the Matto's payments, OTT-7.3 / MIL-4.3) and start afresh (a new hand), its points
    and gains equal the whole scorer's at every step."""
    rng = np.random.default_rng(7 + smn + 10 * mdc)
    t = combo_tables()
    bits = np.left_shift(np.uint64(1), np.arange(NUM_CARDS, dtype=np.uint64))
    weights = np.where(IN_FAMILY, 3.0, 1.0)
    want, got = np.zeros(NUM_CARDS, dtype=np.int64), np.zeros(NUM_CARDS, dtype=np.int64)
    family, with_card = np.zeros((3, 12), dtype=np.int64), np.zeros(NUM_CARDS, dtype=np.int64)
    key = ~np.uint64(0)  # nothing kept yet
    pile, steps_with_contatori = np.uint64(0), 0
    for step in range(600):
        r = rng.random()
        held = np.flatnonzero((pile & bits) != 0)
        if r < 0.03 or len(held) > 40:
            pile = np.uint64(0)  # a new hand
        elif r < 0.12 and len(held):
            pile &= ~bits[rng.choice(held)]  # a card paid away
        else:
            free = np.flatnonzero((pile & bits) == 0)
            p = weights[free] / weights[free].sum()
            for c in rng.choice(free, size=min(len(free), int(rng.integers(1, 3))), replace=False, p=p):
                pile |= bits[c]
        others = np.flatnonzero((pile & bits) == 0)
        taken = pile
        for c in rng.choice(others, size=min(len(others), int(rng.integers(0, 6))), replace=False):
            taken |= bits[c]
        base = evaluate_many(np.array([pile]), moors_double_count=mdc, suit_min_natural=smn)[0][0]
        free = ((taken | pile) & bits) == 0
        want[:] = np.where(free, evaluate_many(pile | bits, moors_double_count=mdc, suit_min_natural=smn)[0] - base, 0)
        got[:] = 0  # (a card whose gain is 0 is not written)
        points, nonzero = pile_gains_kept(pile, taken, key, family, with_card, mdc, smn, t, got)
        assert points == base, step
        assert np.array_equal(got, want), (step, np.flatnonzero(got != want))
        assert nonzero == _as_bits(np.flatnonzero(want)), step
        key = pile
        steps_with_contatori += popcount(pile & t.contatori) > 0
    assert steps_with_contatori > 50  # the walk went through piles with contatori


@pytest.mark.parametrize("smn", [2, 3])
def test_B_5_an_empty_pile_keeps_only_zeros(smn):
    """B.5.1, B.5.3.1: no combination has fewer than 3 cards, so an empty pile's kept values (valued afresh
    by ``pile_sums_kept``: every family with and without one contatore more) are all 0 and no family is live
    (none holds 2 cards: its ``with_card`` is never read); only the contatori may add anything to it (B.5.3.3),
    and they add 0."""
    from tarot_env.rules.combos import CRICCA_FAMILIES, kept_gain, live_cards, pile_sums_kept

    t = combo_tables()
    family, with_card = np.full((3, 12), 7, dtype=np.int8), np.full(NUM_CARDS, 7, dtype=np.int8)
    sums = pile_sums_kept(np.uint64(0), ~np.uint64(0), family, with_card, smn, t)
    assert sums == (0, 0, 0, 0, 0, 0, 0)
    sequences = len(CRICCA_FAMILIES)  # (family[1]: the sequence families' values with a contatore more)
    assert not family[0].any() and not family[1, sequences:].any()
    assert live_cards(0, t) == t.contatori
    assert all(kept_gain(c, sums, family, with_card, t) == 0 for c in range(NUM_CARDS))
