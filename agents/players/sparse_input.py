"""The networks' first layer on sparse observations, on the CPU.

Our observations are mostly zeros: a card is in a hand or not, a seat played it or not. Of Partita's
1,034 floats about 92 are nonzero on average (179 at most), of Ottocento's 1,432 about 104, and the
critic's full state is as sparse. A dense first layer multiplies every zero: on the CPU it was most of
the training time (issue #14). ``linear_in(layer, x)`` computes exactly ``layer(x)`` (the same
``nn.Linear`` parameters, the same state dict) from the nonzero entries only:

* forward: ``out[r] = b + sum_k x[r, j_k] * W[:, j_k]`` over the row's nonzero columns ``j_k``;
* backward: ``dW[:, j_k] += x[r, j_k] * dout[r]`` and ``db = sum_r dout[r]`` (no gradient flows
  to the observation, which never needs one).

The two loops are numba kernels (compiled once, cached like the engine's). A batch in sparse form is a
``SparseRows``: for each row its nonzero columns and values, padded to the batch's largest count;
``SparseRows.of(x)`` builds it from dense float32 rows, ``SparseRows.from_obs(o)`` takes the batched
engine's own sparse observations (``make_vec(..., obs_format="sparse")``, the same layout) as they are,
and ``rows[j]`` takes a minibatch. The CPU trainer collects its rollouts in that form (no dense rows at
all; a central critic's states are converted once per update); ``linear_in`` also converts a dense CPU
batch by itself when that pays (at least ``MIN_ROWS`` rows, at most a quarter of the columns nonzero),
so acting with a trained network gets the same speed-up. CUDA tensors, inputs that need a gradient and
dense inputs go through ``layer(x)`` unchanged. The result equals the dense product up to float rounding
(sums in another order); each path is deterministic.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numba
import numpy as np
import torch
import torch.nn as nn

import tarot_env  # noqa: F401  (it points numba's kernel cache, these kernels' too, at ~/.cache/tarocchini-rl/)

__all__ = ["MIN_ROWS", "SparseRows", "greedy_rows", "linear_in", "weights_frozen"]

MIN_ROWS = 32  # below this many rows the dense product is as fast and the conversion is not worth it
MAX_DENSITY = 0.25  # a batch with more nonzero columns than this share of the width stays dense


@numba.njit(cache=True)
def _nonzero_entries(x, width):
    """Each row's nonzero columns and values, padded to the largest count, if no row has more than
    ``width`` of them (ok = False otherwise). One branch-free pass: every entry is written and the
    position moves on only past a nonzero one."""
    n, d = x.shape
    cols = np.zeros((n, width + 1), np.int32)
    vals = np.zeros((n, width + 1), np.float32)
    counts = np.zeros(n, np.int32)
    for r in range(n):
        c = 0
        for j in range(d):
            v = x[r, j]
            cols[r, c] = j
            vals[r, c] = v
            c += v != 0
            if c > width:
                return cols, vals, counts, False
        cols[r, c] = 0  # the slot after the last entry held a zero's column: clear it
        counts[r] = c
    top = max(1, counts.max()) if n else 1
    return cols[:, :top], vals[:, :top], counts, True


@numba.njit(cache=True)
def _forward(cols, vals, counts, wt, bias, out):
    """out[r] = bias + sum over the row's entries of value * wt[column] (wt = W transposed), four
    entries per pass over the output row."""
    n = cols.shape[0]
    h = wt.shape[1]
    for r in range(n):
        o = out[r]
        for i in range(h):
            o[i] = bias[i]
        c = counts[r]
        k = 0
        while k + 4 <= c:
            v0, v1, v2, v3 = vals[r, k], vals[r, k + 1], vals[r, k + 2], vals[r, k + 3]
            w0, w1, w2, w3 = wt[cols[r, k]], wt[cols[r, k + 1]], wt[cols[r, k + 2]], wt[cols[r, k + 3]]
            for i in range(h):
                o[i] += v0 * w0[i] + v1 * w1[i] + v2 * w2[i] + v3 * w3[i]
            k += 4
        while k < c:
            v = vals[r, k]
            w = wt[cols[r, k]]
            for i in range(h):
                o[i] += v * w[i]
            k += 1


@numba.njit(cache=True)
def _weight_grad(cols, vals, counts, grad_out, grad_wt):
    """grad_wt[column] += value * grad_out[r] over every row's entries (grad_wt = dW transposed)."""
    n = cols.shape[0]
    h = grad_wt.shape[1]
    for r in range(n):
        g = grad_out[r]
        for k in range(counts[r]):
            v = vals[r, k]
            d = grad_wt[cols[r, k]]
            for i in range(h):
                d[i] += v * g[i]


@numba.njit(cache=True, nogil=True, inline="always", _nrt=False)
def _axpy(x, idx, m, flat, base, h, o):
    """o[:h] += sum over k < m of x[k] * flat[base + idx[k] * h : ... + h] (four rows of the transposed
    weights per pass over ``o``, as :func:`_forward` sums them). The first layer's inputs are mostly 1.0 (a
    card held, played, seen: 62-80% of the groups of four are all ones): such a group adds the four weight
    rows without multiplying, which gives the same bits (``1.0 * w == w`` exactly; the sums in the same
    order); the hidden layers' groups (ReLU outputs, seldom all ones) take the multiplying branch."""
    k = 0
    while k + 4 <= m:
        v0, v1, v2, v3 = x[k], x[k + 1], x[k + 2], x[k + 3]
        b0, b1, b2, b3 = base + idx[k] * h, base + idx[k + 1] * h, base + idx[k + 2] * h, base + idx[k + 3] * h
        w0, w1, w2, w3 = flat[b0:b0 + h], flat[b1:b1 + h], flat[b2:b2 + h], flat[b3:b3 + h]
        if v0 == 1.0 and v1 == 1.0 and v2 == 1.0 and v3 == 1.0:
            for i in range(h):
                o[i] += w0[i] + w1[i] + w2[i] + w3[i]
        else:
            for i in range(h):
                o[i] += v0 * w0[i] + v1 * w1[i] + v2 * w2[i] + v3 * w3[i]
        k += 4
    while k < m:
        v, b = x[k], base + idx[k] * h
        w = flat[b:b + h]
        for i in range(h):
            o[i] += v * w[i]
        k += 1


@numba.njit(cache=True, nogil=True, _nrt=False)
def _greedy_row(cols, vals, counts, r, flat, offs, sizes, a, b, idx, mask):
    """The most probable legal action of row ``r`` (:func:`greedy_rows`); ``a``, ``b`` hidden-layer
    scratch, ``idx`` the nonzero inputs' positions."""
    n_in = sizes[0]
    h = sizes[1]
    base = offs[0]
    for i in range(h):
        a[i] = flat[base + n_in * h + i]
    _axpy(vals[r], cols[r], counts[r], flat, base, h, a)
    for layer in range(1, offs.shape[0]):
        m = 0
        for j in range(h):  # ReLU; the next layer reads only the positive entries
            if a[j] > 0.0:
                b[m] = a[j]
                idx[m] = j
                m += 1
        out = sizes[layer + 1]
        base = offs[layer]
        for i in range(out):
            a[i] = flat[base + h * out + i]
        _axpy(b, idx, m, flat, base, out, a)
        h = out
    best = -1
    for i in range(h):  # the last layer's outputs are the logits: the first largest legal one
        if mask[r, i] and (best < 0 or a[i] > a[best]):
            best = i
    return best


_FNV = 1099511628211  # the 64-bit FNV prime: a row's hash mixes its entries and its mask


@numba.njit(cache=True, nogil=True, inline="always", _nrt=False)
def _row_hash(cols, vals, counts, mask, r):
    """A 64-bit hash of row ``r``'s nonzero entries and legal actions (equal rows, equal hashes): four FNV
    chains (columns and values of the even entries, of the odd ones, then the mask), which the processor
    runs side by side, folded into one."""
    c = counts[r]
    h0, h1 = np.int64(-3750763034362895579) ^ c, np.int64(0x27D4EB2F165667C5)
    h2, h3 = np.int64(0x165667B19E3779F9), np.int64(0x61C8864E7A143579)
    k = 0
    while k + 2 <= c:
        h0 = (h0 ^ cols[r, k]) * _FNV
        h1 = (h1 ^ np.int64(vals[r, k] * 4096.0)) * _FNV
        h2 = (h2 ^ cols[r, k + 1]) * _FNV
        h3 = (h3 ^ np.int64(vals[r, k + 1] * 4096.0)) * _FNV
        k += 2
    if k < c:
        h0 = (h0 ^ cols[r, k]) * _FNV
        h1 = (h1 ^ np.int64(vals[r, k] * 4096.0)) * _FNV
    for i in range(mask.shape[1]):
        if mask[r, i]:
            h2 = (h2 ^ (i + 65536)) * _FNV
    return ((((h0 * _FNV) ^ h1) * _FNV ^ h2) * _FNV) ^ h3


@numba.njit(cache=True, nogil=True, inline="always", _nrt=False)
def _same_row(cols, vals, counts, mask, r, s):
    """Whether rows ``r`` and ``s`` have the same nonzero entries and the same legal actions."""
    c = counts[r]
    if counts[s] != c:
        return False
    for k in range(c):
        if cols[r, k] != cols[s, k] or vals[r, k] != vals[s, k]:
            return False
    for i in range(mask.shape[1]):
        if mask[r, i] != mask[s, i]:
            return False
    return True


@numba.njit(cache=True, nogil=True, _nrt=False)
def _first_seen(cols, vals, counts, mask, r, hashes, table):
    """The first row seen before ``r`` with the same observation and mask (``r`` itself if none, and ``r`` is
    then entered in ``table``: an open-addressing table of row ids, -1 where empty, its size a power of two)."""
    h = _row_hash(cols, vals, counts, mask, r)
    hashes[r] = h
    slot = h & (table.shape[0] - 1)
    while table[slot] >= 0:
        s = table[slot]
        if hashes[s] == h and _same_row(cols, vals, counts, mask, r, s):
            return s
        slot = (slot + 1) & (table.shape[0] - 1)
    table[slot] = r
    return r


@numba.njit(cache=True, nogil=True, _nrt=False)
def greedy_rows(cols, vals, counts, mask, live, flat, offs, sizes, a, b, idx, hashes, table, acts):
    """``acts[r]``: a greedy MLP actor's action for every row of a batch of sparse observations, in one
    compiled pass (``agents.players.network.FrozenActor``). A row not ``live`` or with one legal action takes its
    first legal action (0 without any) and no forward pass; a row with the same observation and mask as an
    earlier one takes that row's action, also without one (the search's rows often repeat: the same seat
    in another world, or after another searched action, that it has not seen). The layers are
    ``(in, out)``-transposed weights then the bias, layer ``l`` from ``flat[offs[l]]``, ``sizes`` the widths
    (input first); a ReLU after every layer but the last, whose outputs are the logits. ``hashes`` (one per
    row) and ``table`` (a power of two, at least twice the rows) are scratch."""
    for j in range(table.shape[0]):
        table[j] = -1
    for r in range(mask.shape[0]):
        first, legal = 0, 0
        for i in range(mask.shape[1]):
            if mask[r, i]:
                if legal == 0:
                    first = i
                legal += 1
        acts[r] = first
        if live[r] and legal > 1:
            s = _first_seen(cols, vals, counts, mask, r, hashes, table)
            if s < r:
                acts[r] = acts[s]
            else:
                acts[r] = _greedy_row(cols, vals, counts, r, flat, offs, sizes, a, b, idx, mask)


@dataclass(frozen=True)
class SparseRows:
    """A batch of ``width``-wide float32 rows by their nonzero entries: ``cols[r, :counts[r]]`` and
    ``vals[r, :counts[r]]`` (int32 / float32, padded with column 0 and value 0 to the batch's largest
    count). CPU only."""

    cols: torch.Tensor
    vals: torch.Tensor
    counts: torch.Tensor
    width: int

    @classmethod
    def of(cls, x: np.ndarray | torch.Tensor, max_density: float = 1.0) -> SparseRows | None:
        """The nonzero entries of dense ``[n, width]`` float32 rows (``None`` if a row has more than
        ``max_density * width`` of them)."""
        a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        if a.ndim != 2 or a.dtype != np.float32:
            raise ValueError(f"SparseRows.of needs a 2-D float32 array, got shape {a.shape} dtype {a.dtype}")
        cols, vals, counts, ok = _nonzero_entries(np.ascontiguousarray(a), int(max_density * a.shape[1]))
        if not ok:
            return None
        return cls(torch.from_numpy(np.ascontiguousarray(cols)), torch.from_numpy(np.ascontiguousarray(vals)),
                   torch.from_numpy(counts), a.shape[1])

    @classmethod
    def from_obs(cls, obs) -> SparseRows:
        """The batched engine's sparse observations (``make_vec(..., obs_format="sparse")``: a
        ``tarot_env.vector.sparse.SparseObs``, the same columns / values / counts layout) as they are, cut
        to the batch's largest count: no dense rows in between."""
        top = max(1, int(obs.counts.max())) if len(obs) else 1
        return cls(torch.from_numpy(np.ascontiguousarray(obs.cols[:, :top])),
                   torch.from_numpy(np.ascontiguousarray(obs.vals[:, :top])),
                   torch.from_numpy(np.ascontiguousarray(obs.counts)), int(obs.size))

    def __len__(self) -> int:
        return self.cols.shape[0]

    def __getitem__(self, j) -> SparseRows:
        """Rows ``j`` (an index tensor or a slice), as ``x[j]`` would take them from the dense batch."""
        return SparseRows(self.cols[j], self.vals[j], self.counts[j], self.width)

    def dense(self) -> torch.Tensor:
        """The dense ``[n, width]`` float32 rows again."""
        out = torch.zeros(len(self), self.width)
        return out.scatter_add_(1, self.cols.long(), self.vals)


_frozen: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None  # id(weight) -> (weight, its transpose)


@contextlib.contextmanager
def weights_frozen():
    """Within this block the caller promises not to change any network's weights (a rollout): each input
    layer's transposed weights are then made once and reused, instead of once per forward pass. (The
    weights' version counter cannot tell: a fused optimizer step leaves it unchanged.)"""
    global _frozen
    outer = _frozen
    _frozen = {} if outer is None else outer
    try:
        yield
    finally:
        _frozen = outer


def _transposed(weight: torch.Tensor) -> torch.Tensor:
    """``weight.t()`` as a contiguous array: the kernels read one input column's weights at a time."""
    if _frozen is None:
        return weight.detach().t().contiguous()
    hit = _frozen.get(id(weight))
    if hit is None or hit[0] is not weight:
        hit = (weight, weight.detach().t().contiguous())
        _frozen[id(weight)] = hit
    return hit[1]


class _SparseLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, bias, rows: SparseRows):
        wt = _transposed(weight)
        out = torch.empty(len(rows), weight.shape[0], dtype=torch.float32)
        _forward(rows.cols.numpy(), rows.vals.numpy(), rows.counts.numpy(), wt.numpy(),
                 bias.detach().numpy(), out.numpy())
        ctx.rows = rows
        return out

    @staticmethod
    def backward(ctx, grad_out):
        rows = ctx.rows
        g = grad_out.contiguous()
        grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_wt = torch.zeros(rows.width, g.shape[1], dtype=torch.float32)
            _weight_grad(rows.cols.numpy(), rows.vals.numpy(), rows.counts.numpy(), g.numpy(), grad_wt.numpy())
            grad_w = grad_wt.t().contiguous()
        if ctx.needs_input_grad[1]:
            grad_b = g.sum(0)
        return grad_w, grad_b, None


def _sparse_ok(layer: nn.Linear) -> bool:
    w = layer.weight
    return w.device.type == "cpu" and w.dtype == torch.float32 and layer.bias is not None


def linear_in(layer: nn.Linear, x: torch.Tensor | SparseRows) -> torch.Tensor:
    """``layer(x)`` for a network's input layer, computed from the nonzero entries where that is faster
    (module docstring)."""
    if isinstance(x, SparseRows):
        if x.width != layer.in_features:
            raise ValueError(f"input rows are {x.width} wide, the layer expects {layer.in_features}")
        if not _sparse_ok(layer):
            return layer(x.dense().to(layer.weight.device))
        return _SparseLinear.apply(layer.weight, layer.bias, x)
    if (x.dim() == 2 and x.shape[0] >= MIN_ROWS and x.device.type == "cpu" and x.dtype == torch.float32
            and not x.requires_grad and _sparse_ok(layer) and not torch.is_autocast_enabled("cpu")):
        rows = SparseRows.of(x, MAX_DENSITY)
        if rows is not None:
            return _SparseLinear.apply(layer.weight, layer.bias, rows)
    return layer(x)
