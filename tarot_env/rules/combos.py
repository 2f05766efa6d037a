"""Combinations (meld) of the 62-card Bolognese games: the scoring function of RULES.md B.5
(``docs/rules/bolognese.md``: the cricche, B.5.1, the Criccone, B.5.1.1, the sequences and their doubling,
B.5.2-B.5.4, the reference walk, B.5.5).

``combo_points(S)`` scores a set ``S``: an Ottocento declaration (OTT-5.3), a won pile (C.9, D.5) and the
Millone claim (MIL-3, M-8). One compiled scorer, :func:`evaluate_bits`, reads tables that B.5.5's greedy walk
(:func:`_walk_chain`: at a gap the free skip first, then a contatore, else the chain stops) fills once for
every pattern of a chain family; every public function runs it. :func:`combo_breakdown` walks one set with
its cards, for the text of a declaration.

Decisions taken here, numbered 1-5 where the code cites them (the first three cards, ``suit_min_natural``,
``moors_double_count=False``, the Aces twice, a breakdown's order): ``docs/environments.md``, "Combinations".
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from tarot_env.cards import BOLOGNESE, Pack
from tarot_env.kernels import popcount

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

    @property
    def cards(self) -> tuple[int, ...]:
        """Its members: the head, the chain and the tail."""
        return (self.head, *(c for c, _ in self.chain), *self.tail)


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
FAMILIES = CRICCA_FAMILIES + CHAIN_FAMILIES + SET_FAMILIES  # the twelve, in one numbering

# Sanity of the tables (B.1: 62 distinct cards; B.5.2: 7 sequence families).
assert NUM_CARDS == 62
assert len(CHAIN_FAMILIES + SET_FAMILIES) == 7
assert len(GRANDE.chain) == 15 and len(GRANDE.tail) == 4


# ---------------------------------------------------------------------------------------------
# Precomputed bit tables (speed: everything below works on int bitmasks)
# ---------------------------------------------------------------------------------------------

_CONTATORI_MASK = _mask_of(CONTATORI)
# (family index, mask, value3, value4)
_CRICCA_TABLE = tuple((i, _mask_of(f.cards), f.value3, f.value4) for i, f in enumerate(CRICCA_FAMILIES))
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


@njit(cache=True, nogil=True, _nrt=False)
def _sequence_value(nat: int, k: int, min_natural: int, first3: int) -> int:
    """B.5.3.1, B.5.3.4, B.5.4: ``5 * (n - 1)`` for ``n = nat + k >= 3`` cards with at least
    ``min_natural`` natural cards among the first three (``first3``: of a chain family, from
    :func:`_walk_chain`; a set family, Aces or Moors, has no order: ``nat``); 0 otherwise."""
    n = nat + k
    if n >= SEQUENCE_MIN_LENGTH and first3 >= min_natural:
        return SEQUENCE_STEP * (n - 1)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
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


@njit(cache=True, nogil=True, _nrt=False)
def _divide_moors(seq: int, n_seq: int, moors_v: int, k: int) -> tuple[int, int, bool]:
    """B.5.3.7 / C.12 O-4 with ``moors_double_count=False`` (decision 3).

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
    the Moors family keeps some Moors.
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
# The scorer (B.5.5): the walk of _walk_chain, tabulated and compiled
# ---------------------------------------------------------------------------------------------
# The walk of a chain family depends only on which of its head and chain cards are in the set (its
# *pattern*) and on k, the number of contatori; the tail (the Moors, an Ace) is added when the walk is
# complete. So each family's walk is tabulated once, by _walk_chain itself, for every pattern and k:
# a set is then evaluated with a few table lookups. A family's head and chain cards are consecutive ids
# (the Grande's 16 cards are ids 0..15, a suit's K Q C J four), so its pattern is one shift and mask of
# the set. The tables travel as one ``ComboTables`` (:func:`combo_tables`) into the compiled scorer
# :func:`evaluate_bits`, which the batched engines also call from their own compiled kernels (a Matto
# payment's :func:`cheapest_card`).
_U64 = np.uint64
_KS = len(CONTATORI) + 1  # k = 0, 1, 2


def _chain_table(family: ChainFamily) -> list[np.ndarray]:
    """One chain family's walk (:func:`_walk_chain`) for every pattern and k, row ``pattern * 3 + k``: the
    natural cards reached (without the tail), those among the first three, whether the chain is complete,
    and the cards counted."""
    cards = (family.head,) + tuple(c for c, _ in family.chain)
    assert cards == tuple(range(cards[0], cards[0] + len(cards)))  # consecutive ids: one shift and mask
    chain = tuple((c, 1 << c, skip) for c, skip in family.chain)
    walks = [_walk_chain(p << cards[0], k, 1 << family.head, chain, 0, None)
             for p in range(1 << len(cards)) for k in range(_KS)]
    return [np.array(a, dtype=d) for a, d in zip(zip(*walks), (np.int8, np.int8, _U64, bool))]


class ComboTables(NamedTuple):
    """B.5 as arrays, for the compiled scorer (built once by :func:`combo_tables`).

    ``cricca_masks/v3/v4[f]``   the five cricche (B.5.1): members, 3- and 4-card values
    ``contatori``               the Bégato and the Matto (B.1.4)
    ``in_family``               the cards of some family (``IN_FAMILY``): the others never score
    ``chain_first/len[f]``      chain family ``f``'s head and chain: consecutive card ids, its pattern's bits
    ``offset[f]``               row of family ``f``'s table in the walk tables; a set's row is
                                ``offset[f] + pattern * 3 + k``
    ``nat``, ``first3``, ``complete``, ``counted``: :func:`_walk_chain`'s results for every row
                                (``nat``, ``first3`` int8: a pile's valuation reads them at random, so
                                they are kept small enough to stay in cache)
    ``tails[f]``                the cards after a complete chain (the Moors, the suit's Ace)
    ``set_masks``               the Aces and the Moors (B.5.2: headless, orderless)
    """

    cricca_masks: np.ndarray
    cricca_v3: np.ndarray
    cricca_v4: np.ndarray
    contatori: np.uint64
    in_family: np.uint64
    chain_first: np.ndarray
    chain_len: np.ndarray
    offset: np.ndarray
    nat: np.ndarray
    first3: np.ndarray
    complete: np.ndarray
    counted: np.ndarray
    tails: np.ndarray
    set_masks: np.ndarray


_TABLES: list[ComboTables] = []


def combo_tables() -> ComboTables:
    """The B.5 tables of the compiled scorer, built once per process (about 0.2 s: the Grande alone has
    65,536 patterns x 3 walks)."""
    if not _TABLES:
        walks = [_chain_table(f) for f in CHAIN_FAMILIES]
        cat = lambda i: np.concatenate([w[i] for w in walks])  # noqa: E731
        i64 = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
        _TABLES.append(ComboTables(
            cricca_masks=np.array([m for _, m, _, _ in _CRICCA_TABLE], dtype=_U64),
            cricca_v3=i64([v3 for _, _, v3, _ in _CRICCA_TABLE]), cricca_v4=i64([v4 for _, _, _, v4 in _CRICCA_TABLE]),
            contatori=_U64(_CONTATORI_MASK), in_family=_U64(_mask_of(np.flatnonzero(IN_FAMILY).tolist())),
            chain_first=i64([f.head for f in CHAIN_FAMILIES]),
            chain_len=i64([1 + len(f.chain) for f in CHAIN_FAMILIES]),
            offset=i64(np.cumsum([0] + [len(w[0]) for w in walks[:-1]])), nat=cat(0), first3=cat(1),
            counted=cat(2), complete=cat(3), tails=np.array([_mask_of(f.tail) for f in CHAIN_FAMILIES], dtype=_U64),
            set_masks=np.array([_ACES_MASK, _MOORS_MASK], dtype=_U64)))
    return _TABLES[0]


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _chain_row(m: np.uint64, f: int, k: int, t: ComboTables) -> int:
    """The row of the walk tables of chain family ``f`` in the set ``m`` with ``k`` contatori: the family's
    pattern, one shift and mask."""
    pattern = (m >> np.uint64(t.chain_first[f])) & ((np.uint64(1) << np.uint64(t.chain_len[f])) - np.uint64(1))
    return t.offset[f] + int(pattern) * _KS + k


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _cricca_value(m: np.uint64, f: int, t: ComboTables) -> int:
    """B.5.1: cricca family ``f``'s value in the set ``m`` (undoubled), 0 if it does not score."""
    cnt = popcount(m & t.cricca_masks[f])
    if cnt == 4:
        return t.cricca_v4[f]
    return t.cricca_v3[f] if cnt >= CRICCA_MIN_CARDS else 0


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _chain_value(m: np.uint64, f: int, k: int, suit_min_natural: int, t: ComboTables) -> tuple[int, int]:
    """B.5.2-B.5.5: chain family ``f``'s value in ``m`` with ``k`` contatori (undoubled) and its row of the walk
    tables: one table lookup, the tail after a complete chain (B.5.3.5 the Moors, B.5.3.6 the Ace)."""
    key = _chain_row(m, f, k, t)
    tail = popcount(m & t.tails[f]) if t.complete[key] else 0
    return _sequence_value(t.nat[key] + tail, k, _chain_min_natural(f, suit_min_natural), t.first3[key]), key


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _set_value(m: np.uint64, f: int, k: int, t: ComboTables) -> int:
    """B.5.2: the Aces' (``f`` = 0) or the Moors' (1) value in ``m`` with ``k`` contatori (undoubled)."""
    nat = popcount(m & t.set_masks[f])
    return _sequence_value(nat, k, SEQUENCE_MIN_NATURAL, nat)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _total(cricche: int, n_cricche: int, seq: int, n_seq: int) -> int:
    """B.5.1.1, B.5.4.1: the cricche and the sequences, each sum doubled when 3 or more score."""
    if n_cricche >= DOUBLING_THRESHOLD:
        cricche *= 2
    if n_seq >= DOUBLING_THRESHOLD:
        seq *= 2
    return cricche + seq


@njit(cache=True, nogil=True, _nrt=False)
def evaluate_bits(m: np.uint64, moors_double_count: bool, suit_min_natural: int,
                  t: ComboTables) -> tuple[int, np.uint64]:
    """B.5 of one set ``m`` (uint64) from the tables ``t``: ``(combo points, the set of the cards that score)``
    (``tests/test_combos.py`` compares it with a plain-Python walk, set by set)."""
    k = popcount(m & t.contatori)
    cricche, n_cricche, seq, n_seq, moors_v, scoring, grande_takes_moors = 0, 0, 0, 0, 0, np.uint64(0), False
    for f in range(t.cricca_masks.shape[0]):  # B.5.1 cricche, B.5.1.1 Criccone
        v = _cricca_value(m, f, t)
        if v:
            cricche += v
            n_cricche += 1
            scoring |= m & t.cricca_masks[f]
    for f in range(t.offset.shape[0]):  # B.5.2-B.5.5 sequences: the five chain families, each one table lookup
        v, key = _chain_value(m, f, k, suit_min_natural, t)
        if v:
            seq += v
            n_seq += 1
            scoring |= t.counted[key] | (m & t.tails[f] if t.complete[key] else np.uint64(0))
            grande_takes_moors |= f == 0 and t.complete[key]
    for f in range(t.set_masks.shape[0]):  # the Aces and the Moors: any 2 natural cards (B.5.2)
        v = _set_value(m, f, k, t)
        if v:
            seq += v
            n_seq += 1
            scoring |= m & t.set_masks[f]
            moors_v = v if f == 1 else moors_v
    if grande_takes_moors and not moors_double_count:  # decision 3: each Moor counts once
        seq, n_seq, _ = _divide_moors(seq, n_seq, moors_v, k)
    if n_seq:  # B.5.3.3: every contatore counts in every sequence
        scoring |= m & t.contatori
    return _total(cricche, n_cricche, seq, n_seq), scoring


@njit(cache=True, nogil=True, _nrt=False)
def _evaluate_all(m, moors_double_count, suit_min_natural, t, points, scoring):
    for i in range(m.shape[0]):
        points[i], scoring[i] = evaluate_bits(m[i], moors_double_count, suit_min_natural, t)


def evaluate_many(masks, *, moors_double_count: bool = True,
                  suit_min_natural: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """:func:`combo_points` and :func:`scoring_cards` of many sets at once.

    ``masks`` holds card sets as 62-bit sets (``uint64``, bit ``c`` = card id ``c``), any shape.
    Returns ``(points int64, scoring uint64)`` of that shape: the B.5 points of each set and the set
    of its cards that count in some combination (:func:`evaluate_bits`).
    """
    _check_flags(suit_min_natural)
    m = np.ascontiguousarray(masks, dtype=_U64)
    points = np.empty(m.shape, dtype=np.int64)
    scoring = np.empty(m.shape, dtype=_U64)
    _evaluate_all(m.reshape(-1), bool(moors_double_count), int(suit_min_natural), combo_tables(),
                  points.reshape(-1), scoring.reshape(-1))
    return points, scoring


def _score(cards, moors_double_count: bool, suit_min_natural: int) -> tuple[int, int, int]:
    """``(combo points, the set of the cards that score, the set)`` of ``cards`` (card ids, or ``bool[62]``),
    sets as Python ints: the compiled scorer on one set (:func:`evaluate_many`)."""
    m = _to_mask(cards)
    points, scoring = evaluate_many(np.array([m], dtype=_U64), moors_double_count=moors_double_count,
                                    suit_min_natural=suit_min_natural)
    return int(points[0]), int(scoring[0]), m


def combo_points_many(masks, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """:func:`combo_points` of many card sets (``uint64`` 62-bit sets, any shape): int64 points."""
    return evaluate_many(masks, moors_double_count=moors_double_count, suit_min_natural=suit_min_natural)[0]


def card_points(piles) -> int | np.ndarray:
    """B.3.2: Σ value − |pile| / 2 of ``bool[..., 62]`` piles (B.3.1 values; each pile of even size, B.3.4, else
    ``ValueError``): an int for one pile, int64[...] for many (Millone's end of a hand scores every row's two
    piles at once)."""
    piles = np.asarray(piles, dtype=bool)
    sizes = piles.sum(-1, dtype=np.int64)
    if (sizes % 2).any():
        raise ValueError(f"a won pile always holds an even number of cards (B.3.4), got {sizes}")
    points = piles.astype(np.int64) @ BOLOGNESE.value.astype(np.int64) - sizes // 2
    return int(points) if points.ndim == 0 else points


# The observations' combination features (Ottocento v2, Millone v2: ``pile_combos``, ``combo_gain``) are
# B.5 points / COMBO_SCALE (a cricca 0.12-0.36, the full Grande 1.05). No set of cards scores more than
# 846 = 296 (all cricche, doubled) + 2 x (105 + 4 x 30 + 25 + 25): COMBO_BOUND bounds a pile's points and
# what one card adds to them (the observation spaces' upper bound is COMBO_BOUND / COMBO_SCALE).
COMBO_SCALE = 100
COMBO_BOUND = 1000

# Cards that belong to some combination family (B.5.1, B.5.2, the contatori): all but the plain 6-10
# pips. Taking a card outside every family out of a set never changes its points.
IN_FAMILY = np.zeros(NUM_CARDS, dtype=bool)
IN_FAMILY[[c for f in FAMILIES for c in f.cards] + list(CONTATORI)] = True
IN_FAMILY.setflags(write=False)
assert int((~IN_FAMILY).sum()) == 20  # 4 suits x (6 7 8 9 10)


def _families_of() -> np.ndarray:
    """int64[62, 3]: for each card, the index of its cricca family (in ``CRICCA_FAMILIES``), of its chain
    family (head, chain or tail, in ``CHAIN_FAMILIES``) and of its set family (in ``SET_FAMILIES``), -1
    where it has none. A card belongs to at most one of each kind."""
    out = np.full((NUM_CARDS, 3), -1, dtype=np.int64)
    for kind, families in enumerate((CRICCA_FAMILIES, CHAIN_FAMILIES, SET_FAMILIES)):
        for i, f in enumerate(families):
            assert (out[list(f.cards), kind] == -1).all()
            out[list(f.cards), kind] = i
    return out


FAMILIES_OF = _families_of()
FAMILIES_OF.setflags(write=False)


# --- the gains kept up to date (pile_gains_kept): a pile changes by a card or two at a time ------------------
# The twelve families in one numbering (``FAMILIES``): the cricche, then the chains, then the sets.
N_FAMILIES = len(FAMILIES)
_KIND_START = np.array([0, len(CRICCA_FAMILIES), len(CRICCA_FAMILIES) + len(CHAIN_FAMILIES)], dtype=np.int64)
FAMILY_MEMBERS = np.array([_mask_of(f.cards) for f in FAMILIES], dtype=_U64)
FAMILY_MEMBERS.setflags(write=False)
assert len(FAMILY_MEMBERS) == N_FAMILIES == 12


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _family_value(m: np.uint64, g: int, k: int, suit_min_natural: int, t: ComboTables) -> int:
    """Family ``g`` of the twelve (``FAMILY_MEMBERS``' order)'s undoubled value in ``m`` with ``k`` contatori."""
    if g < _KIND_START[1]:
        return _cricca_value(m, g, t)
    if g < _KIND_START[2]:
        return _chain_value(m, g - _KIND_START[1], k, suit_min_natural, t)[0]
    return _set_value(m, g - _KIND_START[2], k, t)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _family_with_card(pile: np.uint64, g: int, k: int, suit_min_natural: int, t: ComboTables, family: np.ndarray,
                      with_card: np.ndarray) -> None:
    """Family ``g``'s value once one more of its members joins ``pile``: a cricca's or a set's depends on how
    many of its cards are held only (B.5.1, B.5.2), so every card not held brings it to the same value,
    ``family[2, g]``, scored once; a chain's depends on which (B.5.3), so ``with_card[c]`` is scored for each
    member ``c`` not in the pile (a card is in one chain at most); a member in the pile adds nothing and is
    left stale until it leaves (its families then change)."""
    free = FAMILY_MEMBERS[g] & ~pile
    if g < _KIND_START[1] or g >= _KIND_START[2]:
        if free:
            family[2, g] = _family_value(pile | (free & (~free + np.uint64(1))), g, k, suit_min_natural, t)
        return
    while free:
        bit = free & (~free + np.uint64(1))
        free ^= bit
        with_card[popcount(bit - np.uint64(1))] = _family_value(pile | bit, g, k, suit_min_natural, t)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _held(pile: np.uint64, g: int, k: int) -> int:
    """The cards of family ``g`` that ``pile`` holds, its ``k`` contatori counted for a sequence family (B.5.3.3:
    they count in every sequence). A family holding fewer than 3 scores nothing (B.5.1, B.5.3.1), and one
    holding fewer than 2 scores nothing with one card more either: it is not *live*."""
    return popcount(pile & FAMILY_MEMBERS[g]) + (k if g >= _KIND_START[1] else 0)


@njit(cache=True, nogil=True, _nrt=False)
def pile_sums_kept(pile: np.uint64, key: np.uint64, family: np.ndarray, with_card: np.ndarray,
                   suit_min_natural: int, t: ComboTables) -> tuple[int, int, int, int, int, int, int]:
    """:func:`pile_gains_kept`'s arrays brought up to date for ``pile`` (``moors_double_count`` true): returns
    the pile's undoubled sums ``(cricche, n_cricche, seq, n_seq)``, the sequences' with one contatore more
    ``(seq_k1, n_seq_k1)`` and ``live``, the families (bit ``g``) that hold 2 or more cards (:func:`_held`): a
    card adds points only through a live family of its own (a contatore also through every sequence). Card
    ``c``'s gain, for a card in neither pile, is then :func:`kept_gain` of them. Only the families of the cards
    that came or went are valued again (the sequence families too when the number of contatori changed,
    B.5.3.3); a family that holds too few cards to score is 0 without valuing, and a family's values with a
    card more are valued only while it is live (a family becomes live only by a change, which values it again); the
    ``with_card`` of a card in the pile is left as it was (its gain is 0 and is not read)."""
    k = popcount(pile & t.contatori)
    fresh = key == ~np.uint64(0)
    recount = fresh or popcount(key & t.contatori) != k
    changed = pile ^ key
    cricche, n_cricche, seq, n_seq, seq_k1, n_seq_k1, live = 0, 0, 0, 0, 0, 0, 0
    for g in range(N_FAMILIES):
        held = _held(pile, g, k)
        sequence = g >= _KIND_START[1]
        if held >= 2:
            live |= 1 << g
        if fresh or changed & FAMILY_MEMBERS[g] or (recount and sequence):
            family[0, g] = _family_value(pile, g, k, suit_min_natural, t) if held >= CRICCA_MIN_CARDS else 0
            if sequence and k < len(CONTATORI):
                family[1, g] = _family_value(pile, g, k + 1, suit_min_natural, t) if held >= 2 else 0
            if held >= 2:
                _family_with_card(pile, g, k, suit_min_natural, t, family, with_card)
        v = family[0, g]
        if sequence:
            seq += v
            n_seq += v > 0
            seq_k1 += family[1, g]
            n_seq_k1 += family[1, g] > 0
        else:
            cricche += v
            n_cricche += v > 0
    return cricche, n_cricche, seq, n_seq, seq_k1, n_seq_k1, live


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def live_cards(live: int, t: ComboTables) -> np.uint64:
    """The cards that may add points to a pile whose live families are ``live`` (:func:`pile_sums_kept`): their
    members, and the contatori (B.5.3.3: one more lengthens every sequence)."""
    cards = t.contatori
    for g in range(N_FAMILIES):
        if (live >> g) & 1:
            cards |= FAMILY_MEMBERS[g]
    return cards & t.in_family


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def kept_gain(c: int, sums, family: np.ndarray, with_card: np.ndarray, t: ComboTables) -> int:
    """What card ``c`` (in neither pile) adds to a pile of the ``sums`` of :func:`pile_sums_kept`: its live
    families' values with it (``with_card``) in place of theirs (``family``), a contatore's one more in every
    sequence (B.5.3.3), doubled as B.5.1.1 and B.5.4.1 say with it, less the pile's own total."""
    cricche, n_cricche, seq, n_seq, seq_k1, n_seq_k1, live = sums
    d_cr, dn_cr, d_seq, dn_seq = 0, 0, 0, 0
    if (t.contatori >> np.uint64(c)) & np.uint64(1):
        d_seq, dn_seq = seq_k1 - seq, n_seq_k1 - n_seq
    for j in range(3):
        f = FAMILIES_OF[c, j]
        g = _KIND_START[j] + f
        if f >= 0 and (live >> g) & 1:
            old, new = family[0, g], with_card[c] if j == 1 else family[2, g]
            if j == 0:
                d_cr += new - old
                dn_cr += (new > 0) - (old > 0)
            else:
                d_seq += new - old
                dn_seq += (new > 0) - (old > 0)
    if d_cr == 0 and dn_cr == 0 and d_seq == 0 and dn_seq == 0:
        return 0
    return _total(cricche + d_cr, n_cricche + dn_cr, seq + d_seq, n_seq + dn_seq) - _total(cricche, n_cricche, seq,
                                                                                          n_seq)


@njit(cache=True, nogil=True, _nrt=False)
def pile_gains_kept(pile: np.uint64, taken: np.uint64, key: np.uint64, family: np.ndarray, with_card: np.ndarray,
                    moors_double_count: bool, suit_min_natural: int, t: ComboTables,
                    gains: np.ndarray) -> tuple[int, np.uint64]:
    """What each card would add to the B.5 points of a pile that changed a little since it was last valued:
    returns ``(points, nonzero)``, the pile's points and the set of the cards whose gain is not 0, each such
    card's gain written in ``gains[c]`` (the others' entries are left as they were; never a card of ``taken``
    or of the pile). ``key`` is the pile that the other arrays were kept for (all ones: none, or a pile of
    another caller; one flag setting per arrays):

    * ``family[0, g]`` the pile's value of family ``g`` (undoubled, ``FAMILY_MEMBERS``' order), ``family[1,
      g]`` that of a sequence family with one contatore more, ``family[2, g]`` that of a cricca or a set with
      one more of its cards;
    * ``with_card[c]`` the value of card ``c``'s chain family once ``c`` is added (both kept for the live
      families only, :func:`_family_with_card`).

    They are brought up to date for ``pile`` by :func:`pile_sums_kept`; each card's gain is then the pile's
    sums changed by its live families' values with it (:func:`kept_gain`), doubled as B.5.1.1 and B.5.4.1 say.
    Under ``moors_double_count`` false (the division of the Moors, B.5.3.7, depends on the whole set) each card
    of a live family (:func:`live_cards`) goes through the whole scorer, :func:`evaluate_bits` (the others add
    nothing). ``tests/test_combos.py`` follows piles that grow and shrink against the whole
    scorer; ``vector/combo_cache.py`` keeps these arrays per row and pile."""
    if moors_double_count:
        sums = pile_sums_kept(pile, key, family, with_card, suit_min_natural, t)
        points, live = _total(sums[0], sums[1], sums[2], sums[3]), sums[6]
    else:  # the whole scorer: the live families only say which cards may add anything
        sums, k = (0, 0, 0, 0, 0, 0, 0), popcount(pile & t.contatori)
        points, live = evaluate_bits(pile, moors_double_count, suit_min_natural, t)[0], 0
        for g in range(N_FAMILIES):
            if _held(pile, g, k) >= 2:
                live |= 1 << g
    nonzero = np.uint64(0)
    cards = live_cards(live, t) & ~(taken | pile)  # no other card adds anything
    while cards:
        bit = cards & (~cards + np.uint64(1))
        cards ^= bit
        c = popcount(bit - np.uint64(1))
        if moors_double_count:
            gain = kept_gain(c, sums, family, with_card, t)
        else:
            gain = evaluate_bits(pile | bit, moors_double_count, suit_min_natural, t)[0] - points
        if gain != 0:
            gains[c] = gain
            nonzero |= bit
    return points, nonzero


@njit(cache=True, nogil=True)
def combo_gains(pile0: np.uint64, pile1: np.uint64, moors_double_count: bool, suit_min_natural: int,
                t: ComboTables, gains: np.ndarray, points: np.ndarray) -> None:
    """The B.5 value of the cards still to be won, to two piles (uint64 sets): ``points[i]`` := the
    combination points of pile ``i``; ``gains[i, c]`` := what card ``c`` would add to them if pile ``i``
    took it (``combo_points(pile + c) - combo_points(pile)``, never negative: decision 3), 0 for a card
    already in either pile: :func:`pile_gains_kept` of each pile from nothing kept (``tests/test_combos.py``
    compares it with the whole scorer card by card). (The observations' ``pile_combos`` and ``combo_gain``:
    functions of the won piles, which are public by RULES.md H.1.)"""
    family, with_card = np.empty((3, N_FAMILIES), dtype=np.int64), np.empty(NUM_CARDS, dtype=np.int64)
    gains[:] = 0
    for i in range(2):
        points[i] = pile_gains_kept(pile1 if i else pile0, pile0 | pile1, ~np.uint64(0), family, with_card,
                                    moors_double_count, suit_min_natural, t, gains[i])[0]


@njit(cache=True, nogil=True, _nrt=False)
def cheapest_card(s: np.uint64, candidates: np.uint64, order: np.ndarray, moors_double_count: bool,
                  suit_min_natural: int, t: ComboTables) -> int:
    """Of the ``candidates`` (a uint64 subset of the set ``s``), the card whose loss costs ``s`` the
    fewest combination points, ties to the lowest ``order``; -1 for no candidate. A card outside
    every family (``IN_FAMILY``) costs nothing without scoring."""
    best, best_key = -1, 0
    base = -1  # combo points of s, scored when a candidate is in a family
    in_family = t.in_family
    for c in range(NUM_CARDS):
        bit = np.uint64(1) << np.uint64(c)
        if not candidates & bit:
            continue
        loss = 0
        if in_family & bit:
            if base < 0:
                base = evaluate_bits(s, moors_double_count, suit_min_natural, t)[0]
            loss = base - evaluate_bits(s & ~bit, moors_double_count, suit_min_natural, t)[0]
        key = loss * 64 + order[c]
        if best < 0 or key < best_key:
            best, best_key = c, key
    return best


def combo_points(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> int:
    """B.5: cricche points (Criccone-doubled) + sequence points (doubled at 3+ sequences).

    ``cards`` is an iterable of card ids of the Bolognese pack, or a boolean array of length 62.
    """
    return _score(cards, moors_double_count, suit_min_natural)[0]


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


def combo_breakdown(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> ComboBreakdown:
    """B.5 in detail: every scoring cricca and sequence, the doublings and the totals.

    ``combo_breakdown(S).total == combo_points(S)`` for the same flags (the tests check it).
    """
    _check_flags(suit_min_natural)
    mask = _to_mask(cards)
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
        v = _sequence_value(nat, k, _chain_min_natural(i, suit_min_natural), first3)
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
        v = _sequence_value(len(held), k, SEQUENCE_MIN_NATURAL, len(held))
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
    criccone = len(cricche) >= DOUBLING_THRESHOLD  # B.5.1.1
    doubled = len(sequences) >= DOUBLING_THRESHOLD  # B.5.4.1
    cricche_total = sum(c.points for c in cricche) * (2 if criccone else 1)
    sequence_total = sum(s.points for s in sequences) * (2 if doubled else 1)
    return ComboBreakdown(tuple(cricche), tuple(sequences), criccone, doubled, cricche_total, sequence_total,
                          cricche_total + sequence_total)


def scoring_cards(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> np.ndarray:
    """Boolean array over the 62 cards: the given cards that count in at least one scoring
    cricca or sequence.

    A card in ``S`` beyond the point where its chain stops does not count. The Moors taken by the
    Grande when ``moors_double_count`` is off still count, in the Grande. The contatori count as
    soon as any sequence scores (B.5.3.3).
    """
    return ((_score(cards, moors_double_count, suit_min_natural)[1] >> np.arange(NUM_CARDS)) & 1).astype(bool)


def is_scoring_declaration(cards, *, moors_double_count: bool = True, suit_min_natural: int = 2) -> bool:
    """True when the set scores more than 0 and every card in it counts in some combination.

    Ottocento uses this to decide when a declaration may be closed (OTT-5.2): every revealed card
    must score.
    """
    total, scoring, mask = _score(cards, moors_double_count, suit_min_natural)
    return total > 0 and scoring == mask
