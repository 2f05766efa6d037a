"""The v2 combination features kept per row and pile by the batched engines (Ottocento, Millone).

A pile's B.5 points and what each card would add to them (``combos.pile_gains``) change only when the
pile does, and then only for the families of the cards that came or went. :class:`ComboCache` holds,
per row and pile, the card set they were computed for (``key``), the values (``points``, ``gains``, /
``COMBO_SCALE``) and the family values ``combos.pile_gains_kept`` brings up to date; :func:`write_view`
writes a viewer's two sections from two of a row's piles (both engines' encoders call it), bringing each
pile's values up to date first (:func:`combo_values`). The cache checks its keys, so it needs no
bookkeeping at resets, loads or checkpoints (an engine leaves it out of ``get_state`` and keeps it
across ``set_state``): whatever a pile became, its values are brought up to date from the kept ones.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..rules.combos import (
    COMBO_BOUND, COMBO_SCALE, CONTATORI, CRICCA_FAMILIES, FAMILY_MEMBERS, N_FAMILIES, NUM_CARDS, SEQUENCE_STEP,
    kept_gain, kept_total, live_cards, pile_gains_kept, pile_sums_kept,
)
from .sparse import card_index, put

NO_PILE = np.iinfo(np.uint64).max  # a key that is never a real pile (62 cards): nothing valued yet


class ComboCache(NamedTuple):
    """Per row ``b`` and pile ``k``: ``key[b, k]`` the card set valued (``NO_PILE``: none yet), ``points[b,
    k]`` its B.5 points / ``COMBO_SCALE`` and ``gains[b, k, c]`` what card ``c`` would add (int16 points:
    under ``COMBO_BOUND``; divided where written); ``family``, ``with_card`` the arrays
    ``combos.pile_gains_kept`` keeps for ``key`` (int8: no family is worth more than 105 undoubled, B.5.4;
    small, so that a row's share stays in cache); ``nonzero[b, k]`` the cards whose gain is not 0 (a card
    set: the observations read ``gains`` there only, every other card's gain is 0, whatever ``gains`` holds
    for it). ``scratch`` is the kernels' work space (nothing is allocated in them)."""

    key: np.ndarray
    points: np.ndarray
    gains: np.ndarray
    family: np.ndarray
    with_card: np.ndarray
    scratch: np.ndarray
    nonzero: np.ndarray

    @classmethod
    def empty(cls, rows: int, piles: int) -> ComboCache:
        """A cache for ``piles`` piles per row, nothing valued yet."""
        z = lambda *shape, dtype=np.int8: np.zeros((rows, piles) + shape, dtype=dtype)  # noqa: E731
        return cls(np.full((rows, piles), NO_PILE, dtype=np.uint64), z(dtype=np.float32),
                   z(NUM_CARDS, dtype=np.int16), z(3, N_FAMILIES), z(NUM_CARDS),
                   np.zeros(NUM_CARDS, dtype=np.int64), np.zeros((rows, piles), dtype=np.uint64))


# the kept family values fit int8: a cricca's at most (B.5.1), a sequence's of all its cards and both contatori
# (B.5.4: the whole Grande, 105)
_LONGEST = max(int(m).bit_count() for m in FAMILY_MEMBERS) + len(CONTATORI)
assert np.iinfo(np.int8).max >= max(max(f.value4 for f in CRICCA_FAMILIES), SEQUENCE_STEP * (_LONGEST - 1))
assert np.iinfo(np.int16).max >= COMBO_BOUND  # a card's gain


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _empty_pile(cc, b, k):
    """Pile ``k`` of row ``b`` is empty (a new hand): what ``combos.pile_sums_kept`` would keep for it, without
    valuing: no combination scores with fewer than 3 cards (B.5.1, B.5.3.1), so every family's value, with
    or without one contatore more, is 0, no family is live (its ``with_card`` is not read) and every card's
    gain and the pile's points are 0."""
    cc.family[b, k, :, :] = 0
    cc.points[b, k] = 0.0
    cc.nonzero[b, k] = 0
    cc.key[b, k] = 0


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _kept_values(cc, b, k, pile, suit_min_natural, t):
    """``moors_double_count``: pile ``k`` of row ``b``'s values from its kept ones (``combos.pile_sums_kept``),
    and the gains of the cards of its live families and not in it (``combos.live_cards``, ``kept_gain``): a
    card in the pile is never free, every other card's gain is 0 (not written: read where ``nonzero`` only)."""
    family, with_card = cc.family[b, k], cc.with_card[b, k]
    sums = pile_sums_kept(pile, cc.key[b, k], family, with_card, suit_min_natural, t)
    cc.points[b, k] = kept_total(sums[0], sums[1], sums[2], sums[3]) / COMBO_SCALE
    nonzero = np.uint64(0)
    cards = live_cards(sums[6], t) & ~pile
    while cards:
        low = cards & (~cards + np.uint64(1))
        cards ^= low
        c = card_index(low)
        g = kept_gain(c, sums, family, with_card, t)
        if g != 0:
            cc.gains[b, k, c] = g
            nonzero |= low
    cc.nonzero[b, k] = nonzero


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def combo_values(cc, b, k, pile, moors_double_count, suit_min_natural, t):
    """Pile ``k`` of row ``b`` is now the card set ``pile``: its values brought up to date if it changed
    (``combos.pile_gains_kept`` with the B.5 flags and tables ``t``; with ``moors_double_count``
    :func:`_kept_values`; nothing when only cards of no family came or went)."""
    key = cc.key[b, k]
    if key == pile:
        return
    if moors_double_count and key != NO_PILE and not (pile ^ key) & t.in_family:
        cc.key[b, k] = pile  # only cards of no family came or went: the values stand (their gains are 0)
        return
    if moors_double_count and pile == 0:  # a new hand's empty pile: every kept value is 0 (:func:`_empty_pile`)
        _empty_pile(cc, b, k)
        return
    if moors_double_count:
        _kept_values(cc, b, k, pile, suit_min_natural, t)
    else:
        cc.points[b, k] = pile_gains_kept(pile, pile, cc.key[b, k], cc.family[b, k], cc.with_card[b, k],
                                          moors_double_count, suit_min_natural, t, cc.scratch) / COMBO_SCALE
        nonzero = np.uint64(0)
        for c in range(NUM_CARDS):
            g = cc.scratch[c]
            cc.gains[b, k, c] = g
            if g != 0:
                nonzero |= np.uint64(1) << np.uint64(c)
        cc.nonzero[b, k] = nonzero
    cc.key[b, k] = pile


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def write_view(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, out, at):
    """``out[at:at + 126]`` := the observation's v2 sections (``pile_combos``, ``combo_gain``) as a viewer
    sees piles ``k_mine`` (now the card set ``mine``) and ``k_other`` (``other``) of row ``b``: the two piles'
    points, then what each card would add to each, 0 for a card in either pile (already won); the piles'
    values brought up to date first (:func:`combo_values`)."""
    combo_values(cc, b, k_mine, mine, moors_double_count, suit_min_natural, t)
    combo_values(cc, b, k_other, other, moors_double_count, suit_min_natural, t)
    out[at] = cc.points[b, k_mine]
    out[at + 1] = cc.points[b, k_other]
    free = ~(mine | other)
    g = at + 2
    for i in range(2):  # the cards in neither pile whose gain to the pile is not 0, the others 0
        k = k_mine if i == 0 else k_other
        live = cc.nonzero[b, k] & free
        for c in range(NUM_CARDS):
            out[g + c] = cc.gains[b, k, c] / COMBO_SCALE if (live >> np.uint64(c)) & np.uint64(1) else 0.0
        g += NUM_CARDS


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def write_view_sparse(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, cols, vals, n, at):
    """:func:`write_view` in sparse form (``obs_format="sparse"``): the nonzero features of the two sections
    appended to one row's ``cols`` / ``vals`` at count ``n`` (``tarot_env.vector.sparse``); returns the new
    count."""
    combo_values(cc, b, k_mine, mine, moors_double_count, suit_min_natural, t)
    combo_values(cc, b, k_other, other, moors_double_count, suit_min_natural, t)
    n = put(cols, vals, n, at, cc.points[b, k_mine])
    n = put(cols, vals, n, at + 1, cc.points[b, k_other])
    free = ~(mine | other)
    for i in range(2):  # the cards in neither pile whose gain to the pile is not 0, by their set bits
        k = k_mine if i == 0 else k_other
        g = at + 2 + i * NUM_CARDS
        cards = cc.nonzero[b, k] & free
        while cards:
            low = cards & (~cards + np.uint64(1))
            c = card_index(low)
            n = put(cols, vals, n, g + c, cc.gains[b, k, c] / COMBO_SCALE)
            cards ^= low
    return n
