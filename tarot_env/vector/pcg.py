"""``np.random.default_rng`` streams kept in arrays and stepped in compiled code.

A batched engine deals every row from its own generator, seeded like the reference rules object
(``Game(config, seed)``: ``np.random.default_rng(seed)``, a ``Generator(PCG64(SeedSequence(seed)))``).
Stepping thousands of ``Generator`` objects from Python costs more than the rest of a deal, so the
rows' PCG64 states live here in arrays (batch axis first) and the few draws the games make are
written once, in ``numba``, exactly as numpy computes them (``numpy/random/src/pcg64``,
``distributions.c``): :func:`next64`, :func:`next32`, :func:`interval`, :func:`permutation` and the seeding,
:func:`seed_rows`. ``Streams`` moves states between these arrays and ``Generator`` objects (numpy's own
path for the first draws of a reset, and for seeds below ``2**32``, which :func:`_words` does not cover).
``tests/test_vector_partita.py`` and ``tests/test_vector_pcg.py`` compare the draws with numpy's on many seeds.

A 128-bit number is two uint64 words ``(hi, lo)``; all arithmetic is on ``np.uint64`` (numba would
turn a mix of unsigned and signed integers into floats).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_U = np.uint64
M32, S32, S58, S63, ONE, ZERO = _U(0xFFFFFFFF), _U(32), _U(58), _U(63), _U(1), _U(0)
MULT_HI, MULT_LO = _U(0x2360ED051FC65DA4), _U(0x4385DF649FCCF645)  # PCG_DEFAULT_MULTIPLIER_128
NO_HALF = -1  # ``half``: no 32-bit half kept (numpy's has_uint32 = 0)


@njit(cache=True, nogil=True, _nrt=False)
def _mul_64x64(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
    """The full 128-bit product of two 64-bit words, as (hi, lo)."""
    a_lo, a_hi, b_lo, b_hi = a & M32, a >> S32, b & M32, b >> S32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> S32) + (p1 & M32) + (p2 & M32)
    return p3 + (p1 >> S32) + (p2 >> S32) + (mid >> S32), (mid << S32) | (p0 & M32)


@njit(cache=True, nogil=True, _nrt=False)
def _step(state: np.ndarray, inc: np.ndarray, b: int) -> None:
    """The LCG step of row ``b``: state = state * MULT + inc (mod 2**128)."""
    s_hi, s_lo = state[b, 0], state[b, 1]
    hi, lo = _mul_64x64(s_lo, MULT_LO)
    hi += s_hi * MULT_LO + s_lo * MULT_HI
    new_lo = lo + inc[b, 1]
    hi += inc[b, 0] + (ONE if new_lo < lo else ZERO)
    state[b, 0], state[b, 1] = hi, new_lo


@njit(cache=True, nogil=True, _nrt=False)
def next64(state: np.ndarray, inc: np.ndarray, b: int) -> np.uint64:
    """Row ``b``'s next 64-bit output (``random_raw()``): the LCG step, then the XSL-RR output
    ``rotr64(hi ^ lo, hi >> 58)`` of the new state."""
    _step(state, inc, b)
    hi = state[b, 0]
    x, rot = hi ^ state[b, 1], hi >> S58
    return (x >> rot) | (x << ((_U(64) - rot) & S63))


@njit(cache=True, nogil=True, _nrt=False)
def next32(state: np.ndarray, inc: np.ndarray, half: np.ndarray, b: int) -> np.uint64:
    """numpy's ``next_uint32``: a kept high half if there is one, else the low half of a new 64-bit
    output (its high half kept for the next call)."""
    if half[b] != NO_HALF:
        v = _U(half[b])
        half[b] = NO_HALF
        return v
    x = next64(state, inc, b)
    half[b] = np.int64(x >> S32)
    return x & M32


@njit(cache=True, nogil=True, _nrt=False)
def interval(state: np.ndarray, inc: np.ndarray, half: np.ndarray, b: int, top: int) -> int:
    """numpy's ``random_interval(max=top)``: a uniform integer in [0, top] by masked rejection
    (32-bit draws for ``top < 2**32``, the only case used here)."""
    if top == 0:
        return 0
    mask = _U(top)
    for s in (1, 2, 4, 8, 16, 32):
        mask |= mask >> _U(s)
    while True:
        v = next32(state, inc, half, b) & mask
        if v <= _U(top):
            return np.int64(v)


@njit(cache=True, nogil=True, _nrt=False)
def permutation(state: np.ndarray, inc: np.ndarray, half: np.ndarray, b: int, out: np.ndarray) -> None:
    """``Generator.permutation(len(out))`` of row ``b`` into ``out``: ``arange(n)`` shuffled from the
    top (numpy's ``_shuffle_raw``: for i = n-1 .. 1, swap i with ``random_interval(i)``)."""
    n = len(out)
    for i in range(n):
        out[i] = i
    for i in range(n - 1, 0, -1):
        j = interval(state, inc, half, b, i)
        out[i], out[j] = out[j], out[i]


@njit(cache=True, nogil=True, _nrt=False)
def _next_seeds(state: np.ndarray, inc: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    for i in range(len(rows)):
        out[i] = next64(state, inc, rows[i]) >> ONE


def stream_arrays(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays for the generators of ``n`` rows: ``state`` and ``inc`` (uint64[n, 2], (hi, lo) words)
    and ``half`` (int64[n]: numpy's kept 32-bit half, or -1)."""
    return (np.zeros((n, 2), dtype=np.uint64), np.zeros((n, 2), dtype=np.uint64),
            np.full(n, NO_HALF, dtype=np.int64))


class Streams:
    """The generators of a batch's rows, over arrays from :func:`stream_arrays` (held by the engine,
    which checkpoints them)."""

    def __init__(self, state: np.ndarray, inc: np.ndarray, half: np.ndarray):
        self.state, self.inc, self.half = state, inc, half

    def load(self, rows, generators) -> None:
        """Take the states of numpy ``generators`` (PCG64) into ``rows``."""
        for r, g in zip(rows, generators):
            self.load_into(r, g)

    def load_into(self, rows, generator: np.random.Generator) -> None:
        """Every row of ``rows`` (an index or an index array) takes the state of one numpy ``generator`` (PCG64)."""
        st = generator.bit_generator.state
        s, i = st["state"]["state"], st["state"]["inc"]
        self.state[rows] = (s >> 64, s & 0xFFFFFFFFFFFFFFFF)
        self.inc[rows] = (i >> 64, i & 0xFFFFFFFFFFFFFFFF)
        self.half[rows] = st["uinteger"] if st["has_uint32"] else NO_HALF

    def generator(self, row: int) -> np.random.Generator:
        """Row ``row``'s stream as a numpy ``Generator`` (a copy: drawing from it changes nothing here)."""
        g = np.random.default_rng(0)
        h = int(self.half[row])
        g.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": (int(self.state[row, 0]) << 64) | int(self.state[row, 1]),
                      "inc": (int(self.inc[row, 0]) << 64) | int(self.inc[row, 1])},
            "has_uint32": int(h != NO_HALF), "uinteger": max(h, 0)}
        return g

    def reseed(self, rows: np.ndarray, seeds: np.ndarray) -> None:
        """Row ``rows[i]`` becomes ``np.random.default_rng(seeds[i])`` (uint64 seeds): compiled for seeds of
        two 32-bit words (:func:`seed_rows`), numpy's own path for the others."""
        seeds = np.ascontiguousarray(seeds, dtype=np.uint64)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        fast = seeds >= TWO_WORDS  # (every seed but one in 2**31)
        seed_rows(self.state, self.inc, self.half, np.ascontiguousarray(rows[fast]), np.ascontiguousarray(seeds[fast]))
        self.load(rows[~fast].tolist(), [np.random.default_rng(int(s)) for s in seeds[~fast]])

    def next_game_seeds(self, rows: np.ndarray) -> np.ndarray:
        """``rng.integers(2**63)`` of each row (the next game's seed, ``Game.next_game``): Lemire's
        bounded draw over a range of 2**63 never rejects and is the next raw output shifted by one."""
        out = np.zeros(len(rows), dtype=np.uint64)
        _next_seeds(self.state, self.inc, rows, out)
        return out


# --- a new game's stream, all in compiled code (``next_game``: default_rng(rng.integers(2**63))) ---------
# numpy's SeedSequence for a seed of two 32-bit words (2**32 <= seed < 2**64: the entropy [lo, hi]),
# pool size 4, ``generate_state(4, np.uint64)`` (``numpy/random/bit_generator.pyx``; the same hash as
# one seed at a time); 32-bit arithmetic as uint64 masked to 32 bits.
_SS_INIT_A, _SS_MULT_A = _U(0x43B0D7E5), _U(0x931E8875)
_SS_INIT_B, _SS_MULT_B = _U(0x8B51F9DD), _U(0x58F38DED)
_SS_MIX_L, _SS_MIX_R, S16 = _U(0xCA01F9DD), _U(0x4973F715), _U(16)
TWO_WORDS = _U(1 << 32)  # the smallest seed of two entropy words


@njit(cache=True, nogil=True, _nrt=False)
def _hashmix(v: np.uint64, h: np.uint64, mult: np.uint64) -> tuple[np.uint64, np.uint64]:
    """SeedSequence's ``hashmix`` of word ``v`` with hash constant ``h``: (hashed word, next constant); ``mult``:
    the pool's multiplier, or the output words' (``generate_state``)."""
    v = (v ^ h) & M32
    h = (h * mult) & M32
    v = (v * h) & M32
    return v ^ (v >> S16), h


@njit(cache=True, nogil=True, _nrt=False)
def _mix(x: np.uint64, y: np.uint64) -> np.uint64:
    r = (_SS_MIX_L * x - _SS_MIX_R * y) & M32
    return r ^ (r >> S16)


@njit(cache=True, nogil=True, _nrt=False)
def _spread(src: np.uint64, x: np.uint64, y: np.uint64, z: np.uint64, h: np.uint64):
    """One source word of SeedSequence's pool mixed into the other three, in pool order."""
    v, h = _hashmix(src, h, _SS_MULT_A)
    x = _mix(x, v)
    v, h = _hashmix(src, h, _SS_MULT_A)
    y = _mix(y, v)
    v, h = _hashmix(src, h, _SS_MULT_A)
    return x, y, _mix(z, v), h


@njit(cache=True, nogil=True, _nrt=False)
def _words(s: np.uint64) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    """``SeedSequence(s).generate_state(4, np.uint64)`` for a seed of two 32-bit words (``s >= 2**32``)."""
    h = _SS_INIT_A  # mix_entropy: the entropy [lo, hi] and two zeros hashed into the pool, then mixed
    p0, h = _hashmix(s & M32, h, _SS_MULT_A)
    p1, h = _hashmix(s >> S32, h, _SS_MULT_A)
    p2, h = _hashmix(ZERO, h, _SS_MULT_A)
    p3, h = _hashmix(ZERO, h, _SS_MULT_A)
    p1, p2, p3, h = _spread(p0, p1, p2, p3, h)
    p0, p2, p3, h = _spread(p1, p0, p2, p3, h)
    p0, p1, p3, h = _spread(p2, p0, p1, p3, h)
    p0, p1, p2, h = _spread(p3, p0, p1, p2, h)
    h = _SS_INIT_B  # generate_state(4, uint64): 8 words from the pool in turn, paired little-endian
    o0, h = _hashmix(p0, h, _SS_MULT_B)
    o1, h = _hashmix(p1, h, _SS_MULT_B)
    o2, h = _hashmix(p2, h, _SS_MULT_B)
    o3, h = _hashmix(p3, h, _SS_MULT_B)
    o4, h = _hashmix(p0, h, _SS_MULT_B)
    o5, h = _hashmix(p1, h, _SS_MULT_B)
    o6, h = _hashmix(p2, h, _SS_MULT_B)
    o7, h = _hashmix(p3, h, _SS_MULT_B)
    return o0 | (o1 << S32), o2 | (o3 << S32), o4 | (o5 << S32), o6 | (o7 << S32)


@njit(cache=True, nogil=True, _nrt=False)
def _seed_row(state: np.ndarray, inc: np.ndarray, half: np.ndarray, b: int, s: np.uint64) -> None:
    """Row ``b`` := ``np.random.default_rng(s)`` for a seed of two 32-bit words (``s >= 2**32``): PCG64 seeded
    from the SeedSequence words (``pcg_setseq_128_srandom_r``): initstate = (w0, w1), inc = (w2, w3) << 1 | 1;
    state = ((inc + initstate) * MULT + inc)."""
    w0, w1, w2, w3 = _words(s)
    inc[b, 0] = (w2 << ONE) | (w3 >> S63)
    inc[b, 1] = (w3 << ONE) | ONE
    lo = inc[b, 1] + w1
    state[b, 0] = inc[b, 0] + w0 + (ONE if lo < w1 else ZERO)
    state[b, 1] = lo
    _step(state, inc, b)
    half[b] = NO_HALF


@njit(cache=True, nogil=True, _nrt=False)
def seed_rows(state: np.ndarray, inc: np.ndarray, half: np.ndarray, rows: np.ndarray, seeds: np.ndarray) -> None:
    """Row ``rows[i]`` := ``np.random.default_rng(seeds[i])`` (every seed ``>= 2**32``: :func:`_seed_row`)."""
    for i in range(len(rows)):
        _seed_row(state, inc, half, rows[i], seeds[i])
