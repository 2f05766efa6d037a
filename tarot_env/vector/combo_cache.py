"""The v2 combination features kept per row and pile by the batched engines (Ottocento, Millone).

A pile's B.5 points and what each card would add to them (``combos.pile_gains_kept``) change only when the
pile does, and then only for the families of the cards that came or went. :class:`ComboCache` holds,
per row and pile, the card set they were computed for (``key``), the values (``points``, ``gains``, /
``COMBO_SCALE``) and the family values ``combos.pile_gains_kept`` brings up to date; :func:`write_view`
writes a viewer's two sections from two of a row's piles (both engines' encoders call it), bringing each
pile's values up to date first (:func:`combo_values`). The cache checks its keys, so it needs no
bookkeeping at resets, loads or checkpoints (an engine leaves it out of ``get_state`` and keeps it
across ``set_state``): whatever a pile became, its values are brought up to date from the kept ones.
Piles that share no card (Ottocento's teams: ``apart``) are valued for the cards in neither only: the values
hold while the cards left out (``taken``) stay in one of the two.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..rules.combos import (
    COMBO_BOUND, COMBO_SCALE, CONTATORI, CRICCA_FAMILIES, FAMILY_MEMBERS, N_FAMILIES, NUM_CARDS, SEQUENCE_STEP,
    pile_gains_kept,
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
    for it); ``taken[b, k]`` the cards left out when they were valued (the pile, and the other pile if
    ``apart``)."""

    key: np.ndarray
    points: np.ndarray
    gains: np.ndarray
    family: np.ndarray
    with_card: np.ndarray
    nonzero: np.ndarray
    taken: np.ndarray

    @classmethod
    def empty(cls, rows: int, piles: int) -> ComboCache:
        """A cache for ``piles`` piles per row, nothing valued yet."""
        z = lambda *shape, dtype=np.int8: np.zeros((rows, piles) + shape, dtype=dtype)  # noqa: E731
        return cls(np.full((rows, piles), NO_PILE, dtype=np.uint64), z(dtype=np.float32),
                   z(NUM_CARDS, dtype=np.int16), z(3, N_FAMILIES), z(NUM_CARDS),
                   z(dtype=np.uint64), z(dtype=np.uint64))


# the kept family values fit int8: a cricca's at most (B.5.1), a sequence's of all its cards and both contatori
# (B.5.4: the whole Grande, 105)
_LONGEST = max(int(m).bit_count() for m in FAMILY_MEMBERS) + len(CONTATORI)
assert np.iinfo(np.int8).max >= max(max(f.value4 for f in CRICCA_FAMILIES), SEQUENCE_STEP * (_LONGEST - 1))
assert np.iinfo(np.int16).max >= COMBO_BOUND  # a card's gain
_SCALED = (np.arange(COMBO_BOUND + 1) / COMBO_SCALE).astype(np.float32)  # a gain g as written: g / COMBO_SCALE


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def combo_values(cc, b, k, pile, other, moors_double_count, suit_min_natural, t):
    """Pile ``k`` of row ``b`` is now the card set ``pile``, and ``other`` the cards of the other pile (0: not
    known): its values brought up to date (``combos.pile_gains_kept`` with the B.5 flags and tables ``t``, from
    the values kept for the pile it was, for the cards in neither pile) if it changed or a card left out when
    they were valued is in neither now; nothing when only cards of no family came or went."""
    key = cc.key[b, k]
    kept = not cc.taken[b, k] & ~(pile | other)
    if key == pile and kept:
        return
    if moors_double_count and kept and key != NO_PILE and not (pile ^ key) & t.in_family:
        cc.key[b, k] = pile  # only cards of no family came or went: the values stand (their gains are 0)
        return
    taken = pile | other
    points, nonzero = pile_gains_kept(pile, taken, key, cc.family[b, k], cc.with_card[b, k], moors_double_count,
                                      suit_min_natural, t, cc.gains[b, k])
    cc.points[b, k] = points / COMBO_SCALE
    cc.nonzero[b, k] = nonzero
    cc.key[b, k], cc.taken[b, k] = pile, taken


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _both_values(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, apart):
    """:func:`combo_values` of the two piles; ``apart``: each valued for the cards in neither."""
    no = np.uint64(0)
    combo_values(cc, b, k_mine, mine, other if apart else no, moors_double_count, suit_min_natural, t)
    combo_values(cc, b, k_other, other, mine if apart else no, moors_double_count, suit_min_natural, t)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def write_view(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, out, at, apart=False):
    """``out[at:at + 126]`` := the observation's v2 sections (``pile_combos``, ``combo_gain``) as a viewer
    sees piles ``k_mine`` (now the card set ``mine``) and ``k_other`` (``other``) of row ``b``: the two piles'
    points, then what each card would add to each, 0 for a card in either pile (already won); the piles'
    values brought up to date first (:func:`combo_values`; ``apart``: the piles share no card)."""
    _both_values(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, apart)
    out[at] = cc.points[b, k_mine]
    out[at + 1] = cc.points[b, k_other]
    free = ~(mine | other)
    g = at + 2
    for i in range(2):  # the cards in neither pile whose gain to the pile is not 0, the others 0
        k = k_mine if i == 0 else k_other
        live = cc.nonzero[b, k] & free
        for c in range(NUM_CARDS):
            out[g + c] = _SCALED[cc.gains[b, k, c]] if (live >> np.uint64(c)) & np.uint64(1) else 0.0
        g += NUM_CARDS


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def write_view_sparse(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, cols, vals, n, at,
                      apart=False):
    """:func:`write_view` in sparse form (``obs_format="sparse"``): the nonzero features of the two sections
    appended to one row's ``cols`` / ``vals`` at count ``n`` (``tarot_env.vector.sparse``); returns the new
    count."""
    _both_values(cc, b, k_mine, mine, k_other, other, moors_double_count, suit_min_natural, t, apart)
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
            n = put(cols, vals, n, g + c, _SCALED[cc.gains[b, k, c]])
            cards ^= low
    return n
