"""Observations in sparse form (``make_vec(..., obs_format="sparse")``, issue #33; docs/batched.md).

A :class:`SparseObs` holds each row's nonzero features, padded to the game's ``sparse_width``; the kernels
write it directly through the writers below, and a row over the width raises (:func:`check_counts`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

OBS_FORMATS = ("dense", "sparse")  # make_vec(..., obs_format=...)

_ONE = np.uint64(1)  # card sets are walked set bit by set bit, never card by card


@dataclass(frozen=True)
class SparseObs:
    """A batch of observations by their nonzero features: row ``b``'s are ``cols[b, :counts[b]]`` (int32
    column of the dense observation) and ``vals[b, :counts[b]]`` (float32), each column once; the rest of
    the ``width`` slots is padding (column 0, value 0.0). ``size`` is the dense observation's length."""

    cols: np.ndarray
    vals: np.ndarray
    counts: np.ndarray
    size: int

    @property
    def width(self) -> int:
        """The fixed number of slots per row (the game's ``sparse_width``)."""
        return self.cols.shape[1]

    def __len__(self) -> int:
        return self.cols.shape[0]

    def __getitem__(self, rows) -> SparseObs:
        """Rows ``rows`` (an index array, a mask or a slice), as ``dense()[rows]`` would take them."""
        return SparseObs(self.cols[rows], self.vals[rows], self.counts[rows], self.size)

    def copy(self) -> SparseObs:
        return SparseObs(self.cols.copy(), self.vals.copy(), self.counts.copy(), self.size)

    def dense(self) -> np.ndarray:
        """The dense observations, float32[len, size] (equal to what ``obs_format="dense"`` returns)."""
        return self.section(0, self.size)

    def section(self, start: int, stop: int) -> np.ndarray:
        """float32[len, stop - start]: the dense features ``start:stop`` only (a one-hot section, say)."""
        out = np.zeros((len(self), stop - start), dtype=np.float32)
        live = (np.arange(self.width)[None, :] < self.counts[:, None]) & (self.cols >= start) & (self.cols < stop)
        out[np.nonzero(live)[0], self.cols[live] - start] = self.vals[live]
        return out


def sparse_buffers(rows: int, width: int, size: int) -> SparseObs:
    """An all-empty :class:`SparseObs` of ``rows`` rows (what an engine writes into)."""
    return SparseObs(np.zeros((rows, width), dtype=np.int32), np.zeros((rows, width), dtype=np.float32),
                     np.zeros(rows, dtype=np.int32), int(size))


def bounded_width(layout, bounds: dict[str, int]) -> int:
    """The sparse width of an observation ``layout`` (``engine.Layout``): the sum of each section's most
    nonzero features (``bounds``: every section named once, none above its size)."""
    sizes = {k: sl.stop - sl.start for k, sl in layout.offsets.items()}
    if sorted(bounds) != sorted(sizes) or any(bounds[k] > sizes[k] for k in sizes):
        raise ValueError(f"sparse bounds must name each section once, at most its size: {bounds} vs {sizes}")
    return sum(bounds.values())


def check_counts(sp: SparseObs, game: str) -> None:
    """``RuntimeError`` if a row's observation had more nonzeros than the fixed width (its entries past the
    width were dropped): the game's ``sparse_width`` is not an upper bound, a bug to report."""
    top = int(sp.counts.max()) if len(sp) else 0
    if top > sp.width:
        row = int(np.argmax(sp.counts))
        raise RuntimeError(f"{game}: row {row}'s observation has {top} nonzero features, more than the sparse width "
                           f"{sp.width} (the game's sparse_width bound is wrong; use obs_format='dense' meanwhile)")


# --- the kernels' writers: each appends at count ``n`` and returns the new count. They do not branch on
# the value: the entry is written at ``n`` (the last slot once the width is full: the engine raises then)
# and the count moves on only past a nonzero one (a zero's entry is overwritten by the next, or cleared
# as padding by ``finish``).
@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put(cols, vals, n, j, v):
    """Feature ``j`` has value ``v`` (rounded to float32 as the dense observation stores it): kept if
    nonzero."""
    f = np.float32(v)
    k = min(n, cols.shape[0] - 1)
    cols[k] = j
    vals[k] = f
    return n + (f != 0)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put_feature(cols, vals, n, o, j, v):
    """One writer for both forms: feature ``j`` := ``v`` (rounded to float32) into the dense row ``o`` (zeroed
    first), or, ``o`` empty, appended to a sparse row's ``cols`` / ``vals`` (:func:`put`). Returns the count."""
    if o.shape[0]:
        o[j] = v
        return n
    return put(cols, vals, n, j, v)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put_flag(cols, vals, n, j, flag):
    """Feature ``j`` is 1.0 if ``flag`` (a bool or 0/1 cell), else 0: kept if set."""
    k = min(n, cols.shape[0] - 1)
    cols[k] = j
    vals[k] = 1.0
    return n + (flag != 0)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put_one(cols, vals, n, j):
    """Feature ``j`` is 1.0."""
    return put_flag(cols, vals, n, j, 1)


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def card_index(low):
    """The index of the lowest set bit of ``low`` (a nonzero card set): one ``tzcnt``."""
    return np.int64(trailing_zeros(low))


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put_cards(cols, vals, n, bits, at):
    """A card set section: feature ``at + c`` is 1.0 for each card ``c`` of the uint64 set ``bits``, walked
    set bit by set bit."""
    while bits:
        n = put_one(cols, vals, n, at + card_index(bits))
        bits &= bits - _ONE
    return n


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def finish(cols, vals, counts, b, n):
    """Row ``b`` now holds ``n`` entries: the slots its last observation used beyond them (and a zero's entry
    left at ``n``) are cleared to padding (those further on are padding already) and its count set."""
    for i in range(n, min(max(counts[b], n + 1), cols.shape[1])):
        cols[b, i] = 0
        vals[b, i] = 0.0
    counts[b] = n


@njit(cache=True, nogil=True, _nrt=False)
def from_dense(x, cols, vals, counts):
    """Rows of dense observations ``x`` into the sparse buffers (engines without a sparse kernel: the loop
    engine); the entries in column order."""
    for b in range(x.shape[0]):
        n = 0
        row_c, row_v = cols[b], vals[b]
        for j in range(x.shape[1]):
            n = put(row_c, row_v, n, j, x[b, j])
        finish(cols, vals, counts, b, n)
