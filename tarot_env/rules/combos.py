"""Combinations (meld) of the 62-card Bolognese games: the scoring function of RULES.md B.5.

``combo_points(S)`` scores a set ``S`` of Bolognese cards. The result is the **cricche** points
plus the **sequence** points. The same function scores three things:

* an Ottocento declaration (OTT-5.3, applied to one player's declared cards),
* a won pile, in Ottocento (C.9) and in Millone (D.5),
* the Millone game claim (MIL-3, M-8).

What is scored
--------------
* **Cricche** (B.5.1). There are five families of four cards. Three or more natural cards of a
  family score 18/36 (Tarocchi = Angel, World, Bégato, Matto), 17/34 (Kings), 14/28 (Queens),
  13/26 (Cavaliers) or 12/24 (Jacks), for 3 or 4 cards. The contatori are **not** wild here. The
  Bégato and the Matto count in the Tarocchi cricca only because they are members of it (B.1.4).
  With 3 or more cricche the cricche sum is doubled: the **Criccone** (B.5.1.1).
* **Sequences** (B.5.2–B.5.5). There are seven families:

  - the **Grande**: Angel (the head), then World, Sun and Moon with one free skip (B.5.3.2), then
    the trumps 16..5 with no free skip (B.5.3.2, O-3), then every Moor held once the chain is past
    the 5 (B.5.3.5);
  - four **suit** chains: the King (the head), then Queen, Cavalier and Jack with one free skip,
    then the suit's Ace, but only if the figure chain is unbroken (B.5.3.6);
  - the **Aces** and the **Moors**, which have no head and no order (B.5.2).

  Each contatore (the Bégato and the Matto, B.1.4) fills one gap of a chain or is appended to it.
  The same contatore counts in **every** sequence of ``S`` (B.5.3.3). So a sequence holding ``nat``
  natural cards is ``n = nat + k`` cards long, where ``k`` is the number of contatori in ``S``. It
  is valid when ``n >= 3`` (B.5.3.1) and at least 2 of its **first three cards** are natural
  (B.5.3.4: contatori make up at most one of them; decision 1). It is then worth
  ``5 * (n - 1)`` (B.5.4). With 3 or more valid sequences the sequence sum is doubled (B.5.4.1).
  That doubling is independent of the Criccone.

The implementation is B.5.5's greedy walk. At a gap it spends the free skip first, then a
contatore, and otherwise the chain stops. Sets are handled as Python ``int`` bitmasks over the
62 card ids, and the family tables below are built once at import time.

Decisions taken here (each is pinned by a test in ``tests/test_combos.py``)
---------------------------------------------------------------------------
1. **Validity follows the explicit clauses B.5.3.4 and B.5.3.6, not B.5.5's ``nat >= 2``.** For
   a chain family (the Grande and the four suits), the first three cards of the sequence are the
   head and the next two chain positions that hold a card, natural or contatore. A used free skip
   is not a card, and contatori that fill no gap come after the chain. At most one of these three
   may be a contatore, i.e. at least 2 must be natural. The suit's Ace and the Grande's Moors come
   after the whole chain, so they are never among the first three: they only lengthen a sequence
   that is already valid by its first three cards ("l'Asso non può servire per terza Figura").
   B.5.5's pseudocode counts them in ``nat`` and would accept ``K [Q skip] Bégato Matto A`` and
   ``Angel [World skip] Bégato Matto 16`` (15 each). Here they score 0, because two contatori sit
   among their first three cards. The two readings differ only in such cases, where the second
   natural card comes after two contatore fills. No source example is one of them. The greedy
   walk stays optimal: whichever missing figure takes the free skip, the first three cards hold
   the same natural cards. The Aces and the Moors have no head and no order, so they keep B.5.5's
   rule: ``m >= 2`` natural cards and ``n >= 3``.
2. **``suit_min_natural``** (C.12 O-2, values 2 or 3) is the number of natural cards required
   among the first three cards of the four **suit** sequences. With 3 (Pisarri's "almeno tre
   Figure"), the King and two of Queen, Cavalier and Jack must be natural: ``K Q Matto`` and
   ``K Q [C skip] [J ← Matto] A`` no longer score (the Ace is never one of the three figures),
   while ``K Q C`` and ``K Q [C skip] J + Matto`` still do. The **Grande** keeps 2 natural cards
   among its first three under either value: Pisarri's own Grande in B.5.6 #1 (``Angel [World
   skip] [Sun ← Matto] Moon``) has a contatore there, and that example scores 181 under both. The
   Aces and Moors have no head or figures that O-2 could refer to, so they always need 2 natural
   cards.
3. **``moors_double_count=False``** (B.5.3.7, O-4). The Moors are part of the Grande's chain
   (B.5.3.5): a scoring Grande that gets past the 5 reaches every Moor in ``S``. With the flag off
   each Moor counts in at most one of the Grande and the Moors family, and the **division that
   scores most** (doublings included) is taken, ties to the Grande (:func:`_divide_moors`). Only
   two divisions can be best: every Moor in the Grande (the Moors family drops out), or the fewest
   Moors that make the Moors family valid (:func:`_moors_split`: 2, or 3 with no contatore; the
   first ones in card order) in the Moors family and the rest in the Grande, which changes the sum
   by ``5 (k - 1)`` and keeps the Moors family in the count of sequences for the doubling (B.5.4.1).
   So winning one more card never lowers a set's points under any flag setting (tested on
   thousands of sets), although one family may shrink: adding the 5 to ``Angel … 6`` + 3 Moors
   moves the Moors into the Grande (Moors 10 -> 0, total 80 -> 90). When the Grande stops before
   the 5, the Moors score only as the Moors family. The cards that score are the same under both
   values: every Moor counts somewhere whichever division is taken.
4. The Aces always count both in their suit sequence and in the Aces family (B.5.3.7, Pisarri
   ex. 3).
5. In a :class:`ComboBreakdown` each contatore is listed at the chain position it fills. The
   Bégato is used before the Matto. Contatori that fill no gap are listed at the end. The points
   of each cricca and sequence are shown undoubled, and the doubling shows in the totals only.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from tarot_env.cards import BOLOGNESE, Pack

__all__ = [
    "ComboBreakdown",
    "Cricca",
    "Sequence",
    "combo_points",
    "combo_points_many",
    "evaluate_many",
    "cheapest_cards",
    "IN_FAMILY",
    "combo_breakdown",
    "scoring_cards",
    "is_scoring_declaration",
    "CRICCA_FAMILIES",
    "CHAIN_FAMILIES",
    "SET_FAMILIES",
    "GRANDE",
    "SUIT_CHAINS",
    "ACES",
    "MOORS",
    "CONTATORI",
    "BEGATO",
    "MATTO",
]

_id = BOLOGNESE.parse
NUM_CARDS = BOLOGNESE.size  # 62 (B.1)


def _ids(names: str) -> tuple[int, ...]:
    return tuple(_id(n) for n in names.split())


def _mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


# ---------------------------------------------------------------------------------------------
# Game facts (RULES.md B.1.4, B.5.1–B.5.4), declared once
# ---------------------------------------------------------------------------------------------

# B.1.4 / B.5.3.3: the contatori (wild cards for sequences only).
BEGATO = _id("Begato")
MATTO = _id("Matto")
CONTATORI: tuple[int, ...] = (BEGATO, MATTO)  # Bégato first: it fills the first gap (decision 5)

SEQUENCE_MIN_LENGTH = 3  # B.5.3.1: at least 3 cards, contatori included
SEQUENCE_MIN_NATURAL = 2  # B.5.3.4: head + 1 (the default of suit_min_natural, O-2)
SEQUENCE_STEP = 5  # B.5.4: value = 5 * (n - 1)
DOUBLING_THRESHOLD = 3  # B.5.1.1 (Criccone) and B.5.4.1: 3 or more are doubled
CRICCA_MIN_CARDS = 3  # B.5.1: at least 3 natural cards of a family


@dataclass(frozen=True)
class CriccaFamily:
    """B.5.1: a family of four cards; 3 natural members score ``value3``, all 4 ``value4``."""

    name: str
    cards: tuple[int, ...]
    value3: int
    value4: int

    @property
    def mask(self) -> int:
        return _mask_of(self.cards)


@dataclass(frozen=True)
class ChainFamily:
    """B.5.2 / B.5.3: a headed sequence family.

    ``chain`` lists the cards after the head in order, each with a flag saying whether the
    family's single free skip may be spent on it (B.5.3.2). ``tail`` holds the cards that follow a
    complete chain in any order (the Moors after the 5, B.5.3.5; the Ace after the Jack, B.5.3.6).
    """

    name: str
    head: int
    chain: tuple[tuple[int, bool], ...]
    tail: tuple[int, ...]


@dataclass(frozen=True)
class SetFamily:
    """B.5.2: a headless, orderless sequence family (Aces, Moors)."""

    name: str
    cards: tuple[int, ...]


# B.5.1 table: family, members, 3-card value, 4-card value.
CRICCA_FAMILIES: tuple[CriccaFamily, ...] = (
    CriccaFamily("Tarocchi", _ids("Angel World Begato Matto"), 18, 36),
    CriccaFamily("Kings", _ids("KD KC KS KB"), 17, 34),
    CriccaFamily("Queens", _ids("QD QC QS QB"), 14, 28),
    CriccaFamily("Cavaliers", _ids("CD CC CS CB"), 13, 26),
    CriccaFamily("Jacks", _ids("JD JC JS JB"), 12, 24),
)

_MOOR_IDS = _ids("Moor1 Moor2 Moor3 Moor4")

# B.5.2 / B.5.3.2 / B.5.3.5: Angel; World, Sun, Moon (one free skip); 16..5 (no free skip);
# then the Moors. The Bégato is not a chain position: it is always a contatore (B.5.3.5).
GRANDE = ChainFamily(
    "Grande",
    head=_id("Angel"),
    chain=tuple((c, True) for c in _ids("World Sun Moon"))
    + tuple((_id(f"T{r}"), False) for r in range(16, 4, -1)),
    tail=_MOOR_IDS,
)

# B.5.2 / B.5.3.2 / B.5.3.6: King; Queen, Cavalier, Jack (one free skip); then the Ace.
_SUITS = (("Coins", "D"), ("Cups", "C"), ("Swords", "S"), ("Batons", "B"))
SUIT_CHAINS: tuple[ChainFamily, ...] = tuple(
    ChainFamily(
        name,
        head=_id("K" + s),
        chain=tuple((_id(r + s), True) for r in "QCJ"),
        tail=(_id("A" + s),),
    )
    for name, s in _SUITS
)

ACES = SetFamily("Aces", _ids("AD AC AS AB"))  # B.5.2: no head
MOORS = SetFamily("Moors", _MOOR_IDS)  # B.5.2: no head

CHAIN_FAMILIES: tuple[ChainFamily, ...] = (GRANDE,) + SUIT_CHAINS
SET_FAMILIES: tuple[SetFamily, ...] = (ACES, MOORS)
SEQUENCE_FAMILY_NAMES: tuple[str, ...] = tuple(f.name for f in CHAIN_FAMILIES + SET_FAMILIES)

# Sanity of the tables (B.1: 62 distinct cards; B.5.2: 7 sequence families).
assert NUM_CARDS == 62
assert len(SEQUENCE_FAMILY_NAMES) == 7
assert len(GRANDE.chain) == 15 and len(GRANDE.tail) == 4


# ---------------------------------------------------------------------------------------------
# Precomputed bit tables (speed: everything below works on int bitmasks)
# ---------------------------------------------------------------------------------------------

_CONTATORI_MASK = _mask_of(CONTATORI)
# (family index, mask, value3, value4)
_CRICCA_TABLE = tuple((i, f.mask, f.value3, f.value4) for i, f in enumerate(CRICCA_FAMILIES))
# (head bit, ((card, bit, skippable), ...), tail mask) for the Grande then the four suits
_CHAIN_TABLE = tuple(
    (1 << f.head, tuple((c, 1 << c, skip) for c, skip in f.chain), _mask_of(f.tail))
    for f in CHAIN_FAMILIES
)
_ACES_MASK = _mask_of(ACES.cards)
_MOORS_MASK = _mask_of(MOORS.cards)
_FULL_MASK = (1 << NUM_CARDS) - 1


def _to_mask(cards) -> int:
    """Bitmask of ``cards``: an iterable of card ids, or a boolean array over the 62 cards."""
    if isinstance(cards, np.ndarray):
        if cards.dtype == np.bool_:
            if cards.shape != (NUM_CARDS,):
                raise ValueError(f"a boolean card mask must have shape ({NUM_CARDS},), got {cards.shape}")
            return int.from_bytes(np.packbits(cards, bitorder="little").tobytes(), "little")
        cards = cards.tolist()
    m = 0
    try:
        for c in cards:
            m |= 1 << c  # a negative id raises ValueError here
    except (ValueError, TypeError):
        raise ValueError(f"card ids must be integers in 0..{NUM_CARDS - 1}: {cards!r}") from None
    if m > _FULL_MASK:
        raise ValueError(f"card ids must be integers in 0..{NUM_CARDS - 1}: {cards!r}")
    return m


def _mask_to_array(mask: int) -> np.ndarray:
    """Boolean array over the 62 cards from a bitmask."""
    return np.unpackbits(
        np.frombuffer(mask.to_bytes(8, "little"), dtype=np.uint8), bitorder="little"
    )[:NUM_CARDS].astype(bool)


def _walk_chain(mask: int, k: int, head_bit: int, chain, tail_mask: int, fills: list | None):
    """B.5.5 greedy walk of a headed family.

    Returns ``(nat, first3, counted_mask, complete)``. ``nat`` counts the natural cards reached
    and ``counted_mask`` holds them. ``first3`` counts the natural cards among the first three
    cards of the sequence (B.5.3.4, B.5.3.6): the head and the next two chain positions that hold
    a card, natural or contatore (a used free skip is not a card). Contatori that fill no gap come
    after the chain, so they are never natural; the Ace and the Moors come after the whole chain,
    so they are never among the first three. ``complete`` is True when the chain got past its last
    position, so that the tail was counted. When ``fills`` is a list, the card positions filled by
    contatori are appended to it.
    """
    if not mask & head_bit:  # B.5.3.2: the head is required and can never be skipped
        return 0, 0, 0, False
    nat = 1
    first3 = 1  # the head
    placed = 1  # cards of the sequence so far (head, naturals, fills)
    counted = head_bit
    fill = k
    skip = True  # B.5.3.2: one free skip, only where the chain allows it
    for card, bit, skippable in chain:
        if mask & bit:
            nat += 1
            if placed < SEQUENCE_MIN_LENGTH:
                first3 += 1
            placed += 1
            counted |= bit
        elif skippable and skip:
            skip = False  # not a card: it does not take one of the first three places
        elif fill:  # B.5.3.3: a contatore fills the gap
            fill -= 1
            placed += 1
            if fills is not None:
                fills.append(card)
        else:  # an unfillable gap stops the chain
            return nat, first3, counted, False
    tail = mask & tail_mask  # B.5.3.5 Moors after the 5; B.5.3.6 Ace after the Jack
    return nat + tail.bit_count(), first3, counted | tail, True


def _seq_value(nat: int, k: int, min_natural: int, first3: int | None = None) -> int:
    """B.5.4 value of a sequence with ``nat`` natural cards and ``k`` contatori (0 if invalid).

    Validity (B.5.3.1, B.5.3.4): at least 3 cards, and at least ``min_natural`` natural cards
    among the first three. For a chain family ``first3`` is that count (from :func:`_walk_chain`);
    a set family (Aces, Moors) has no order and passes ``None``, so all ``nat`` naturals count.
    """
    n = nat + k
    if n >= SEQUENCE_MIN_LENGTH and (nat if first3 is None else first3) >= min_natural:
        return SEQUENCE_STEP * (n - 1)
    return 0


def _chain_min_natural(family: int, suit_min_natural: int) -> int:
    """Natural cards the first three cards of chain family ``family`` (0 = the Grande, 1..4 the
    suits, the order of ``CHAIN_FAMILIES``) must hold: C.12 O-2 binds the four suits only; the Grande
    keeps 2 under either value (decision 2)."""
    return SEQUENCE_MIN_NATURAL if family == 0 else suit_min_natural


def _moors_split(k: int) -> int:
    """Decision 3: how many Moors the Moors family takes when a division gives it some: the fewest
    that make it valid (2 natural cards, 3 cards with the ``k`` contatori, B.5.5), so that the ties
    go to the Grande."""
    return max(SEQUENCE_MIN_NATURAL, SEQUENCE_MIN_LENGTH - k)


@njit(cache=True, nogil=True)
def _divide_moors(seq, n_seq, moors_v, k):
    """B.5.3.7 / C.12 O-4 with ``moors_double_count=False`` (decision 3), for one set.

    The set holds a scoring Grande that got past the 5, so it counts every Moor present; ``seq``
    (undoubled) and ``n_seq`` count all the sequences with the Moors counted twice, ``moors_v`` being
    the Moors family's value (0: it does not score). Each Moor may count in one of the two only, and
    the division that scores most is taken, ties to the Grande:

    * all the Moors in the Grande: the Moors family drops out;
    * ``_moors_split(k)`` Moors in the Moors family (possible when it scores with all of them), the
      rest in the Grande: the Grande is that many cards (5 points each) shorter, the Moors family
      ``5 (_moors_split + k - 1)``, so the sum changes by ``5 (k - 1)`` and the family still counts
      towards the doubling (B.5.4.1). Any other division scores less than one of these two.

    Returns ``(seq, n_seq, split)``: the undoubled sum and count of the division taken, and whether
    the Moors family keeps some Moors. Compiled (``numba``): :func:`_evaluate` and the batched
    :func:`evaluate_many` call this one function.
    """
    scores = moors_v > 0
    seq_all = seq - moors_v  # every Moor in the Grande
    n_all = n_seq - (1 if scores else 0)
    seq_split = seq_all + SEQUENCE_STEP * (k - 1)
    doubled_all = seq_all * (2 if n_all >= DOUBLING_THRESHOLD else 1)
    doubled_split = seq_split * (2 if n_seq >= DOUBLING_THRESHOLD else 1)
    if scores and doubled_split > doubled_all:
        return seq_split, n_seq, True
    return seq_all, n_all, False


def _check_flags(suit_min_natural: int) -> None:
    if suit_min_natural not in (2, 3):
        raise ValueError(f"suit_min_natural must be 2 or 3 (RULES.md C.12 O-2), got {suit_min_natural!r}")


# ---------------------------------------------------------------------------------------------
# Scoring (B.5.5) and the public API
# ---------------------------------------------------------------------------------------------

def _evaluate(mask: int, moors_double_count: bool, suit_min_natural: int) -> tuple[int, int]:
    """The fast path of B.5: ``(combo points, mask of the cards that score)``."""
    # B.5.1 cricche, B.5.1.1 Criccone
    cricche = 0
    n_cricche = 0
    scoring = 0
    for _, fam_mask, v3, v4 in _CRICCA_TABLE:
        held = mask & fam_mask
        m = held.bit_count()
        if m >= CRICCA_MIN_CARDS:
            n_cricche += 1
            cricche += v4 if m == 4 else v3
            scoring |= held
    if n_cricche >= DOUBLING_THRESHOLD:
        cricche *= 2

    # B.5.2–B.5.5 sequences
    k = (mask & _CONTATORI_MASK).bit_count()
    seq = 0
    n_seq = 0
    grande_takes_moors = False
    for i, (head_bit, chain, tail_mask) in enumerate(_CHAIN_TABLE):
        if not mask & head_bit:
            continue
        nat, first3, counted, complete = _walk_chain(mask, k, head_bit, chain, tail_mask, None)
        v = _seq_value(nat, k, _chain_min_natural(i, suit_min_natural), first3)
        if v:
            seq += v
            n_seq += 1
            scoring |= counted
            if i == 0 and complete:
                grande_takes_moors = True
    moors_v = 0
    for fam_mask in (_ACES_MASK, _MOORS_MASK):
        held = mask & fam_mask
        v = _seq_value(held.bit_count(), k, SEQUENCE_MIN_NATURAL)
        if v:
            seq += v
            n_seq += 1
            scoring |= held
            if fam_mask == _MOORS_MASK:
                moors_v = v
    if grande_takes_moors and not moors_double_count:  # decision 3: each Moor counts once
        seq, n_seq, _ = _divide_moors(seq, n_seq, moors_v, k)
    # (the scoring cards are those of moors_double_count=True: every Moor counts in the Grande or
    # in the Moors family whichever division is taken, decision 3)
    if n_seq:  # B.5.3.3: every contatore counts in every sequence
        scoring |= mask & _CONTATORI_MASK
    if n_seq >= DOUBLING_THRESHOLD:  # B.5.4.1
        seq *= 2
    return cricche + seq, scoring


# ---------------------------------------------------------------------------------------------
# Many sets at once (the batched engines): the same walk as _evaluate, as array code
# ---------------------------------------------------------------------------------------------
# The walk of a chain family depends only on which of its head and chain cards are in the set (its
# *pattern*) and on k, the number of contatori; the tail (the Moors, an Ace) is added when the walk is
# complete. So each family's walk is tabulated once, by _walk_chain itself, for every pattern and k:
# a set is then evaluated with a few table lookups. A pattern's bits are the family's head and chain
# cards in order; the card ids make a few contiguous runs (the Grande's 16 cards are ids 0..15), each
# read with one shift and mask.
_U64 = np.uint64
_KS = len(CONTATORI) + 1  # k = 0, 1, 2


def _runs(cards: tuple[int, ...]) -> tuple[tuple[int, int, int], ...]:
    """(first card id, length, first pattern bit) of each run of consecutive ids in ``cards``."""
    runs: list[list[int]] = []
    for i, c in enumerate(cards):
        if runs and c == runs[-1][0] + runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([c, 1, i])
    return tuple((c, n, i) for c, n, i in runs)


class _ChainTable:
    """One chain family's walk for every (pattern, k): natural cards reached (without the tail), the
    natural cards among the first three, whether the chain is complete, and the cards counted."""

    def __init__(self, family: ChainFamily):
        cards = (family.head,) + tuple(c for c, _ in family.chain)
        self.runs = _runs(cards)
        self.tail = _U64(_mask_of(family.tail))
        head_bit, chain = 1 << family.head, tuple((c, 1 << c, skip) for c, skip in family.chain)
        size = 1 << len(cards)
        nat = np.zeros((size, _KS), dtype=np.int8)
        first3 = np.zeros((size, _KS), dtype=np.int8)
        complete = np.zeros((size, _KS), dtype=bool)
        counted = np.zeros((size, _KS), dtype=_U64)
        for p in range(size):
            mask = _mask_of(c for i, c in enumerate(cards) if p >> i & 1)
            for k in range(_KS):
                nat[p, k], first3[p, k], counted[p, k], complete[p, k] = _walk_chain(mask, k, head_bit, chain, 0,
                                                                                     None)
        self.nat, self.first3 = nat.reshape(-1), first3.reshape(-1)
        self.complete, self.counted = complete.reshape(-1), counted.reshape(-1)


class _ChainTables:
    """The five families' tables end to end (the Grande first): row ``offset[f] + pattern * 3 + k``,
    the pattern read from a set's bits run by run (``runs``)."""

    def __init__(self):
        self.families = [_ChainTable(f) for f in CHAIN_FAMILIES]
        sizes = [len(t.nat) for t in self.families]
        self.offset = np.cumsum([0] + sizes[:-1]).astype(np.int64)  # [5]
        for name in ("nat", "first3", "complete", "counted"):
            setattr(self, name, np.concatenate([getattr(t, name) for t in self.families]))
        self.tails = np.array([t.tail for t in self.families], dtype=_U64)  # [5]
        # [5, runs, 3]: each family's runs (first card id, length, first pattern bit); length 0 pads
        self.runs = np.zeros((len(self.families), max(len(t.runs) for t in self.families), 3), dtype=np.int64)
        for f, t in enumerate(self.families):
            self.runs[f, :len(t.runs)] = t.runs


_TABLES: list[_ChainTables] = []  # built at the first evaluate_many (the Grande's: 65,536 x 3 walks)
_CRICCA_MASKS = np.array([m for _, m, _, _ in _CRICCA_TABLE], dtype=_U64)  # [5]
_CRICCA_V3 = np.array([v3 for _, _, v3, _ in _CRICCA_TABLE], dtype=np.int64)
_CRICCA_V4 = np.array([v4 for _, _, _, v4 in _CRICCA_TABLE], dtype=np.int64)


_SET_MASKS = np.array([_ACES_MASK, _MOORS_MASK], dtype=_U64)  # [2]: B.5.2, headless and orderless


@njit(cache=True, nogil=True, inline="always")
def _popcount(x):
    """The number of cards in the uint64 set ``x``."""
    x = x - ((x >> _U64(1)) & _U64(0x5555555555555555))
    x = (x & _U64(0x3333333333333333)) + ((x >> _U64(2)) & _U64(0x3333333333333333))
    x = (x + (x >> _U64(4))) & _U64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * _U64(0x0101010101010101)) >> _U64(56))


@njit(cache=True, nogil=True, inline="always")
def _seq_value_of(nat, k, first3, min_natural):
    """:func:`_seq_value` in the compiled loop (``first3 = nat`` for the set families)."""
    n = nat + k
    return SEQUENCE_STEP * (n - 1) if n >= SEQUENCE_MIN_LENGTH and first3 >= min_natural else 0


@njit(cache=True, nogil=True)
def _evaluate_sets(m, points, scoring, cricca_masks, cricca_v3, cricca_v4, runs, nat_t, first3_t, complete_t,
                   counted_t, offset, tails, set_masks, min_natural, moors_double_count):
    """:func:`_evaluate` of every set ``m[i]`` through the chain tables (:class:`_ChainTables`)."""
    zero = _U64(0)
    contatori_mask = _U64(_CONTATORI_MASK)
    for i in range(len(m)):
        x = m[i]
        # B.5.1 cricche, B.5.1.1 Criccone
        cricche, n_cricche, sc = 0, 0, zero
        for f in range(len(cricca_masks)):
            held = x & cricca_masks[f]
            cnt = _popcount(held)
            if cnt >= CRICCA_MIN_CARDS:
                n_cricche += 1
                cricche += cricca_v4[f] if cnt == 4 else cricca_v3[f]
                sc |= held
        if n_cricche >= DOUBLING_THRESHOLD:
            cricche *= 2
        # B.5.2-B.5.5 sequences: the five chain families from their tables
        contatori = x & contatori_mask
        k = _popcount(contatori)
        seq, n_seq, grande_takes_moors = 0, 0, False
        for f in range(len(offset)):
            pattern = zero
            for r in range(runs.shape[1]):
                c, n, at = runs[f, r, 0], runs[f, r, 1], runs[f, r, 2]
                if n > 0:
                    pattern |= ((x >> _U64(c)) & _U64((1 << n) - 1)) << _U64(at)
            key = offset[f] + np.int64(pattern) * _KS + k
            complete = complete_t[key]
            tail = x & tails[f] if complete else zero  # B.5.3.5 the Moors, B.5.3.6 the Ace
            v = _seq_value_of(nat_t[key] + _popcount(tail), k, first3_t[key], min_natural[f])
            if v > 0:
                seq += v
                n_seq += 1
                sc |= counted_t[key] | tail
                if f == 0 and complete:
                    grande_takes_moors = True
        # the Aces and the Moors: any 2 natural cards (B.5.2)
        moors_v = 0
        for f in range(len(set_masks)):
            held = x & set_masks[f]
            nat = _popcount(held)
            v = _seq_value_of(nat, k, nat, SEQUENCE_MIN_NATURAL)
            if v > 0:
                seq += v
                n_seq += 1
                sc |= held
                if f == 1:
                    moors_v = v
        if grande_takes_moors and not moors_double_count:  # decision 3: each Moor counts once
            seq, n_seq, _ = _divide_moors(seq, n_seq, moors_v, k)
        if n_seq > 0:  # B.5.3.3: every contatore counts in every sequence
            sc |= contatori
        if n_seq >= DOUBLING_THRESHOLD:  # B.5.4.1
            seq *= 2
        points[i] = cricche + seq
        scoring[i] = sc


def evaluate_many(masks, *, moors_double_count: bool = True,
                  suit_min_natural: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """:func:`combo_points` and :func:`scoring_cards` of many sets at once.

    ``masks`` holds card sets as 62-bit sets (``uint64``, bit ``c`` = card id ``c``), any shape.
    Returns ``(points int64, scoring uint64)`` of that shape: the B.5 points of each set and the set
    of its cards that count in some combination, exactly as :func:`_evaluate` (the chain walks are
    :func:`_walk_chain`'s own, tabulated; a compiled loop over the sets, :func:`_evaluate_sets`;
    ``tests/test_combos.py`` compares the two on many sets).
    """
    _check_flags(suit_min_natural)
    if not _TABLES:
        _TABLES.append(_ChainTables())
    t = _TABLES[0]
    m = np.ascontiguousarray(masks, dtype=_U64)
    shape = m.shape
    m = m.reshape(-1)
    points = np.empty(len(m), dtype=np.int64)
    scoring = np.empty(len(m), dtype=_U64)
    min_natural = np.array([_chain_min_natural(f, suit_min_natural) for f in range(len(CHAIN_FAMILIES))])
    _evaluate_sets(m, points, scoring, _CRICCA_MASKS, _CRICCA_V3, _CRICCA_V4, t.runs, t.nat, t.first3,
                   t.complete, t.counted, t.offset, t.tails, _SET_MASKS, min_natural, bool(moors_double_count))
    return points.reshape(shape), scoring.reshape(shape)


def combo_points_many(masks, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """:func:`combo_points` of many card sets (``uint64`` 62-bit sets, any shape): int64 points."""
    return evaluate_many(masks, moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)[0]


# Cards that belong to some combination family (B.5.1, B.5.2, the contatori): all but the plain 6-10
# pips. Taking a card outside every family out of a set never changes its points.
IN_FAMILY = np.zeros(NUM_CARDS, dtype=bool)
for _f in CRICCA_FAMILIES + SET_FAMILIES:
    IN_FAMILY[list(_f.cards)] = True
for _f in CHAIN_FAMILIES:
    IN_FAMILY[[_f.head] + [c for c, _ in _f.chain] + list(_f.tail)] = True
IN_FAMILY[list(CONTATORI)] = True
IN_FAMILY.setflags(write=False)
assert int((~IN_FAMILY).sum()) == 20  # 4 suits x (6 7 8 9 10)
_BITS = np.left_shift(_U64(1), np.arange(NUM_CARDS, dtype=_U64))
_FEW_SETS = 64  # below this many sets to score, the one-set walk beats building evaluate_many's tables


def cheapest_cards(sets, candidates, order, *, moors_double_count: bool = True,
                   suit_min_natural: int = 2) -> np.ndarray:
    """For each set, the candidate card whose loss costs the set the fewest combination points.

    The Matto payments (OTT-7.3, MIL-4.3) give such a card. ``sets`` and ``candidates`` are boolean
    arrays ``[n, 62]`` (every candidate in its set); ``order`` (int[62], values 0..63) breaks the
    ties: the lowest ``order`` among the cards of least loss. Returns int64[n], -1 where a set has no
    candidate. The loss of a card outside every family (``IN_FAMILY``) is 0 without scoring; the
    others are scored by :func:`combo_points_many`, all at once, or, when they are few and its tables
    are not built yet, one by one (the same points: ``tests/test_combos.py`` compares the two).
    """
    _check_flags(suit_min_natural)
    sets = np.asarray(sets, dtype=bool)
    cand = np.asarray(candidates, dtype=bool)
    if sets.ndim != 2 or sets.shape[1] != NUM_CARDS or cand.shape != sets.shape:
        raise ValueError(f"sets and candidates must be boolean arrays [n, {NUM_CARDS}] of one shape, "
                         f"got {sets.shape} and {cand.shape}")
    if (cand & ~sets).any():
        raise ValueError("every candidate card must be in its set")
    order = np.asarray(order, dtype=np.int64)
    if order.shape != (NUM_CARDS,) or order.min() < 0 or order.max() >= 64:
        raise ValueError(f"order must give each of the {NUM_CARDS} cards a rank in 0..63")
    loss = np.zeros(cand.shape, dtype=np.int64)
    rows, cards = np.nonzero(cand & IN_FAMILY)
    bits = np.bitwise_or.reduce(np.where(sets, _BITS, _U64(0)), axis=1)
    if len(rows) > _FEW_SETS or _TABLES:  # many sets, or the tables are built: evaluate_many
        flags = dict(moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)
        base = combo_points_many(bits, **flags)
        loss[rows, cards] = base[rows] - combo_points_many(bits[rows] & ~_BITS[cards], **flags)
    elif len(rows):  # a few (a game's own payment): the one-set walk, no table to build
        base = {r: _evaluate(int(bits[r]), moors_double_count, suit_min_natural)[0] for r in set(rows.tolist())}
        loss[rows, cards] = [base[r] - _evaluate(int(bits[r]) & ~(1 << c), moors_double_count, suit_min_natural)[0]
                             for r, c in zip(rows.tolist(), cards.tolist())]
    key = np.where(cand, loss * 64 + order, np.iinfo(np.int64).max)
    return np.where(cand.any(1), key.argmin(1), -1)


def combo_points(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> int:
    """B.5: cricche points (Criccone-doubled) + sequence points (doubled at 3+ sequences).

    ``cards`` is an iterable of card ids of the Bolognese pack, or a boolean array of length 62.
    """
    _check_flags(suit_min_natural)
    return _evaluate(_to_mask(cards), moors_double_count, suit_min_natural)[0]


class Cricca(NamedTuple):
    """One scoring cricca: family name, its natural cards held (ids), undoubled points."""

    family: str
    cards: tuple[int, ...]
    points: int


class Sequence(NamedTuple):
    """One scoring sequence: family name, its cards (ids, contatori included), length, points.

    ``cards`` is in chain order. A contatore that fills a gap sits at that gap's position, and
    the other contatori come last. ``points`` = 5 * (length - 1), undoubled.
    """

    family: str
    cards: tuple[int, ...]
    length: int
    points: int


def _line(pack: Pack, family: str, cards: tuple[int, ...], points: int) -> str:
    return f"{family} x{len(cards)}: {' '.join(pack.name(c) for c in cards)} = {points}"


@dataclass(frozen=True)
class ComboBreakdown:
    """The combinations found in a card set, with their points (B.5)."""

    cricche: tuple[Cricca, ...]
    sequences: tuple[Sequence, ...]
    criccone: bool  # B.5.1.1: 3+ cricche, cricche doubled
    sequences_doubled: bool  # B.5.4.1: 3+ sequences, sequences doubled
    cricche_total: int  # after the Criccone doubling
    sequence_total: int  # after the sequence doubling
    total: int

    def describe(self, pack: Pack = BOLOGNESE) -> str:
        """Readable text, one line per combination, using the card names of ``pack``."""
        lines = [_line(pack, c.family, c.cards, c.points) for c in self.cricche]
        if self.criccone:
            lines.append(
                f"Criccone ({len(self.cricche)} cricche): "
                f"{self.cricche_total // 2} x 2 = {self.cricche_total}"
            )
        lines += [_line(pack, s.family, s.cards, s.points) for s in self.sequences]
        if self.sequences_doubled:
            lines.append(
                f"Sequences doubled ({len(self.sequences)} sequences): "
                f"{self.sequence_total // 2} x 2 = {self.sequence_total}"
            )
        if not lines:
            return "No combinations = 0"
        lines.append(f"Total = {self.total}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe(BOLOGNESE)


def _analyse(mask: int, moors_double_count: bool, suit_min_natural: int):
    """B.5 with card lists, for :func:`combo_breakdown`: ``(cricche, sequences)``, undoubled.

    It mirrors :func:`_evaluate`, and the tests check that both give the same totals.
    """
    cricche: list[Cricca] = []
    for i, fam_mask, v3, v4 in _CRICCA_TABLE:
        held = mask & fam_mask
        m = held.bit_count()
        if m >= CRICCA_MIN_CARDS:
            fam = CRICCA_FAMILIES[i]
            cards = tuple(c for c in fam.cards if held >> c & 1)
            cricche.append(Cricca(fam.name, cards, v4 if m == 4 else v3))

    contatori = tuple(c for c in CONTATORI if mask >> c & 1)
    k = len(contatori)
    sequences: list[Sequence] = []
    grande_takes_moors = False
    for i, (head_bit, chain, tail_mask) in enumerate(_CHAIN_TABLE):
        fam = CHAIN_FAMILIES[i]
        fills: list[int] = []
        nat, first3, counted, complete = _walk_chain(mask, k, head_bit, chain, tail_mask, fills)
        v = _seq_value(nat, k, _chain_min_natural(i, suit_min_natural), first3)
        if not v:
            continue
        if i == 0 and complete:
            grande_takes_moors = True
        # chain order, each contatore at the position it fills (decision 5)
        filler = dict(zip(fills, contatori))
        cards: list[int] = [fam.head]
        for c, _ in fam.chain:
            if counted >> c & 1:
                cards.append(c)
            elif c in filler:
                cards.append(filler[c])
        cards += [c for c in fam.tail if counted >> c & 1]
        cards += contatori[len(fills):]
        sequences.append(Sequence(fam.name, tuple(cards), nat + k, v))
    for fam in SET_FAMILIES:
        held = tuple(c for c in fam.cards if mask >> c & 1)
        v = _seq_value(len(held), k, SEQUENCE_MIN_NATURAL)
        if v:
            sequences.append(Sequence(fam.name, held + contatori, len(held) + k, v))
    if grande_takes_moors and not moors_double_count:  # decision 3: each Moor counts once
        moors = next((s for s in sequences if s.family == MOORS.name), None)
        seq = sum(s.points for s in sequences)
        _, _, split = _divide_moors(seq, len(sequences), moors.points if moors else 0, k)
        grande = sequences[0]  # the Grande scores, so it came first
        if moors:
            sequences.remove(moors)
        if split:  # the first _moors_split(k) Moors to the Moors family, the others to the Grande
            to_moors = moors.cards[:_moors_split(k)]
            g_cards = tuple(c for c in grande.cards if c not in to_moors)
            sequences[0] = Sequence(grande.family, g_cards, len(g_cards), SEQUENCE_STEP * (len(g_cards) - 1))
            sequences.append(Sequence(MOORS.name, to_moors + contatori, len(to_moors) + k,
                                      SEQUENCE_STEP * (len(to_moors) + k - 1)))
    return cricche, sequences


def combo_breakdown(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> ComboBreakdown:
    """B.5 in detail: every scoring cricca and sequence, the doublings and the totals.

    ``combo_breakdown(S).total == combo_points(S)`` for the same flags.
    """
    _check_flags(suit_min_natural)
    cricche, sequences = _analyse(_to_mask(cards), moors_double_count, suit_min_natural)
    criccone = len(cricche) >= DOUBLING_THRESHOLD  # B.5.1.1
    doubled = len(sequences) >= DOUBLING_THRESHOLD  # B.5.4.1
    cricche_total = sum(c.points for c in cricche) * (2 if criccone else 1)
    sequence_total = sum(s.points for s in sequences) * (2 if doubled else 1)
    return ComboBreakdown(
        cricche=tuple(cricche),
        sequences=tuple(sequences),
        criccone=criccone,
        sequences_doubled=doubled,
        cricche_total=cricche_total,
        sequence_total=sequence_total,
        total=cricche_total + sequence_total,
    )


def scoring_cards(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """Boolean array over the 62 cards: the given cards that count in at least one scoring
    cricca or sequence.

    A card in ``S`` beyond the point where its chain stops does not count. The Moors taken by the
    Grande when ``moors_double_count`` is off still count, in the Grande. The contatori count as
    soon as any sequence scores (B.5.3.3).
    """
    _check_flags(suit_min_natural)
    _, scoring = _evaluate(_to_mask(cards), moors_double_count, suit_min_natural)
    return _mask_to_array(scoring)


def is_scoring_declaration(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> bool:
    """True when the set scores more than 0 and every card in it counts in some combination.

    Ottocento uses this to decide when a declaration may be closed (OTT-5.2): every revealed card
    must score.
    """
    _check_flags(suit_min_natural)
    mask = _to_mask(cards)
    total, scoring = _evaluate(mask, moors_double_count, suit_min_natural)
    return total > 0 and scoring == mask
