"""Determinisation: complete game states drawn uniformly from what one player knows (RULES.md Part H).

``sample_worlds(game, player, n, rng)`` returns ``n`` cloned rules objects ("worlds") in which every card the
player cannot see is dealt again, uniformly among the deals that agree with everything he knows (H.1–H.5:
B.4.1–B.4.3, PAR-4.3–4.5, PAR-5.2, OTT-4.2, OTT-5.2, OTT-5.5, MIL-2.4, MIL-3, MIL-4.3), so that each world gives
him the real game's observation and legal moves (H.6). The sampler is exact: rectangular problems counted
and drawn class by class (:class:`Places`), count conditions as mixtures, rare conditions by rejection.
What a world keeps, what is redealt, and the method: docs/search.md, "The determinisation sampler".
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .engine import TrickGame, card_union
from .vector.base import unpack_cards

__all__ = ["Determinizer", "game_of", "sample_worlds"]


# --- input checks -------------------------------------------------------------------------------------
def game_of(game_or_env) -> TrickGame:
    """The rules object of a rules object or of a tarot AEC env (``env.unwrapped.game``)."""
    if isinstance(game_or_env, TrickGame):
        return game_or_env
    g = getattr(getattr(game_or_env, "unwrapped", game_or_env), "game", None)
    if isinstance(g, TrickGame):
        return g
    raise ValueError(f"expected a tarot rules object (PartitaGame, OttocentoGame, MilloneGame) or a tarot "
                     f"AEC env after reset(), got {type(game_or_env).__name__}")


def _seat(game: TrickGame, player) -> int:
    P = game.num_players
    if isinstance(player, str) and player.startswith("player_") and player[7:].isdigit():
        player = int(player[7:])
    if isinstance(player, (bool, np.bool_)) or not isinstance(player, (int, np.integer)) or not 0 <= player < P:
        raise ValueError(f"unknown player {player!r} for {game.name}: players are seats 0..{P - 1} "
                         f"(or 'player_0'..'player_{P - 1}')")
    return int(player)


def _check_n(n) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n must be an int >= 1 (the number of worlds), got {n!r}")  # noqa: TRY004 (the API says ValueError)
    if n < 1:
        raise ValueError(f"n must be >= 1 (the number of worlds), got {n}")
    return int(n)


# --- the exact sampler of a rectangular problem -------------------------------------------------------
@dataclass
class Places:
    """One rectangular problem: ``cards`` (ids) go to ``len(sizes)`` places; card ``cards[i]`` may go
    to place ``l`` iff ``allowed[l, cards[i]]``; place ``l`` takes exactly ``sizes[l]`` cards."""

    cards: np.ndarray
    sizes: list[int]
    allowed: np.ndarray  # bool[L, N]
    _memo: dict = field(default_factory=dict, repr=False)

    def count(self) -> int:
        """Number of assignments (which card in which place) that meet every condition: exact up to
        2**53, beyond that to a relative 1e-15 (the counting recursion runs in float64, :func:`_count_table`)."""
        return int(round(self.weight()))

    def weight(self) -> float:
        """:meth:`count` as a float (a mixture's weight)."""
        return float(self._table()[1]) if sum(self.sizes) == len(self.cards) else 0.0

    def sample_bits(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` uniform assignments at once, as card sets: ``uint64[n, places]`` (bit ``c``: card ``c``),
        drawn by one compiled walk (:func:`_walk`) over the table of the counting recursion."""
        if self.weight() == 0:
            raise ValueError("no assignment meets the conditions")
        out = np.zeros((n, len(self.sizes)), dtype=np.uint64)
        _walk(n, _seed(rng), *self._table()[0], out)
        return out

    def _table(self) -> tuple[tuple[np.ndarray, ...], float]:
        """The counting recursion (:func:`_count_table`, compiled), run once: the walk's table (the arrays
        :func:`_walk` takes) and the total count."""
        if "table" not in self._memo:
            sizes = np.asarray(self.sizes, dtype=np.int64).reshape(len(self.sizes))
            *table, total = _table_kernel(sizes, np.ascontiguousarray(self.allowed, dtype=np.bool_),
                                          np.asarray(self.cards, dtype=np.int64), _BINOMIALS)
            if total == _TOO_LARGE:
                raise ValueError(f"too many places or cards for the counting recursion: sizes {self.sizes}")
            self._memo["table"] = (tuple(table), total)
        return self._memo["table"]


@njit(cache=True, nogil=True)
def _walk(n, seed, opt_start, opt_cum, opt_next, opt_split, class_start, class_cards, class_places, out):
    """``n`` uniform assignments (``Places.sample_bits``): per class, an option drawn with its probability,
    then the class's cards shuffled (Fisher-Yates) and dealt to its places in the option's split. The table:
    ``opt_start`` int64[states, 2] (a state's options, [first, end)), ``opt_cum`` float64[options] (their
    cumulated probability within the state), ``opt_next`` int64[options] (the state each leads to),
    ``opt_split`` int64[options, places] (the cards of the class each place takes); ``class_start``
    int64[classes + 1] (class i's cards are ``class_cards[class_start[i]:class_start[i + 1]]``), ``class_cards``
    int64[cards], ``class_places`` int64[classes, places] (the places class i may go to, then -1)."""
    np.random.seed(seed)
    buf = np.empty(max(len(class_cards), 1), dtype=np.int64)
    for w in range(n):
        state = 0
        for i in range(len(class_start) - 1):
            a, b = opt_start[state, 0], opt_start[state, 1]
            u = np.random.random()
            o = a
            while o < b - 1 and opt_cum[o] <= u:
                o += 1
            lo, hi = class_start[i], class_start[i + 1]
            m = hi - lo
            for j in range(m):
                buf[j] = class_cards[lo + j]
            _shuffle(buf, 0, m)
            pos = 0
            for q in range(class_places.shape[1]):
                place = class_places[i, q]
                if place < 0:
                    break
                for _ in range(opt_split[o, place]):
                    out[w, place] |= np.uint64(1) << np.uint64(buf[pos])
                    pos += 1
            state = opt_next[o]


_TOO_LARGE = -2.0  # :func:`_table_kernel`'s total for a problem whose states cannot be keyed in an int64


@njit(cache=True, nogil=True)
def _table_kernel(sizes, allowed, cards, binom):
    """:meth:`Places._table` compiled: the classes (:func:`_classes`), then the counting recursion
    (:func:`_count_table`), asked again with more room until its states and options fit. Returns the
    :func:`_walk`'s table and the total count (``_TOO_LARGE`` when the states' keys would overflow)."""
    class_places, class_start, class_cards = _classes(allowed, cards)
    C, L = len(class_start) - 1, len(sizes)
    base = 1
    for x in sizes:
        base = max(base, x + 1)
    if (C + 1) * float(base) ** L >= 2.0 ** 62:
        return (np.zeros((1, 2), dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64),
                np.zeros((0, L), dtype=np.int64), class_start, class_cards, class_places, _TOO_LARGE)
    room = np.int64(1 << 9)  # (an int64, not the literal: numba would compile _count_table for each)
    while True:  # (the states and options fit in the first arrays, short of a very large problem)
        opt_start, opt_cum, opt_next, opt_split, total = _count_table(
            sizes, class_places, np.diff(class_start), binom, room, 4 * room)
        if total >= 0:
            return opt_start, opt_cum, opt_next, opt_split, class_start, class_cards, class_places, total
        room *= 8


@njit(cache=True, nogil=True)
def _classes(allowed, cards):
    """Interchangeable cards (:meth:`Places.classes`): the cards of ``cards`` with the same allowed places
    (``allowed[:, card]``, at most 8 places), the classes with the fewest places first, then by their places
    in lexical order; each class's cards in the order of ``cards``. Returns ``(class_places int64[C, L] (the
    places, then -1), class_start int64[C + 1], class_cards int64[cards])`` (:func:`_walk`)."""
    L, k = allowed.shape[0], len(cards)
    masks = np.zeros(k, dtype=np.int64)
    members = np.zeros(1 << L, dtype=np.int64)
    for i in range(k):
        for q in range(L):
            if allowed[q, cards[i]]:
                masks[i] |= 1 << q
        members[masks[i]] += 1
    present = np.flatnonzero(members)
    C = len(present)
    places = np.full((C, L), -1, dtype=np.int64)
    order = np.empty(C, dtype=np.int64)  # (number of places, the places as base-8 digits)
    for j in range(C):
        n_places, digits = 0, 0
        for q in range(L):
            if present[j] >> q & 1:
                places[j, n_places] = q
                n_places += 1
                digits = digits * 8 + q
        order[j] = n_places * 8 ** 8 + digits * 8 ** (8 - n_places)
    by = np.argsort(order)
    class_start = np.zeros(C + 1, dtype=np.int64)
    class_cards = np.empty(k, dtype=np.int64)
    for i in range(C):
        pos = class_start[i]
        for j in range(k):
            if masks[j] == present[by[i]]:
                class_cards[pos] = cards[j]
                pos += 1
        class_start[i + 1] = pos
    return places[by], class_start, class_cards


# binomial coefficients as float64, each correctly rounded (exact up to 2**53): the multinomials' factors
_BINOMIALS = np.array([[float(math.comb(n, k)) for k in range(65)] for n in range(65)], dtype=np.float64)


@njit(cache=True, nogil=True)
def _fill_low(room, split, q, m):
    """Parts ``q ..`` of ``split`` take ``m`` cards, each part as low as the later places' room allows (the
    first such split in :func:`_next_split`'s order); False when they cannot hold them."""
    later = 0
    for r in range(q, len(room)):
        later += room[r]
    if m > later:
        return False
    for r in range(q, len(room)):
        later -= room[r]
        split[r] = max(0, m - later)
        m -= split[r]
    return True


@njit(cache=True, nogil=True)
def _next_split(room, split):
    """The next way (in place): every ordered split of the class's cards with part ``q`` at most
    ``room[q]``, in lexical order of the parts; False after the last."""
    P = len(room)
    left = split[P - 1]
    for q in range(P - 2, -1, -1):
        left += split[q]
        if split[q] < room[q] and left - split[q] - 1 >= 0:
            split[q] += 1  # one more here, the rest as low as the later places' room allows
            return _fill_low(room, split, q + 1, left - split[q])
    return False


@njit(cache=True, nogil=True)
def _state_key(layer, caps, base):
    key = layer
    for x in caps:
        key = key * base + x
    return key


@njit(cache=True, nogil=True)
def _overflow(L):
    """:func:`_count_table`'s answer when its arrays are too small."""
    none = np.zeros(0, dtype=np.int64)
    return np.zeros((1, 2), dtype=np.int64), np.zeros(0), none, np.zeros((0, L), dtype=np.int64), -1.0


@njit(cache=True, nogil=True)
def _count_table(sizes, class_places, class_sizes, binom, max_states, max_options):
    """The exact counting recursion over classes of interchangeable cards, compiled. A state is ``(class i,
    the places' remaining capacities)``; its count is the sum over the splits of class ``i``'s cards among
    its places of ``multinomial(split) x count(next state)`` (float64). The states are built layer by layer
    (class by class, the root first), the counts backwards; each option (a split whose next state has a
    count) keeps its probability ``multinomial x count(next) / count(state)``, cumulated, for :func:`_walk`.
    Returns ``(opt_start, opt_cum, opt_next, opt_split, total)`` (:func:`_walk`), or a total of -1
    when there are more than ``max_states`` states or ``max_options`` options (the caller asks again with more
    room: fixed arrays keep the loop fast)."""
    C, L = len(class_sizes), len(sizes)
    base = np.int64(1)  # (int64 values, not literals, in the calls below: one compile of each)
    for x in sizes:
        base = max(base, x + 1)
    states = np.empty((max_states, L), dtype=np.int64)
    layer_of = np.empty(max_states, dtype=np.int64)
    states[0], layer_of[0] = sizes, 0
    n_states, n_opts = 1, 0
    ids = {_state_key(np.int64(0), sizes, base): 0}
    o_from, o_to = np.empty(max_options, dtype=np.int64), np.empty(max_options, dtype=np.int64)
    o_split, o_mult = np.empty((max_options, L), dtype=np.int64), np.empty(max_options)
    room, split, nxt = np.zeros(L, dtype=np.int64), np.zeros(L, dtype=np.int64), np.zeros(L, dtype=np.int64)
    lo = np.zeros(L, dtype=np.int64)
    # avail[i, l]: the cards of classes i, i+1, ... that may go to place l. A split that leaves place l more room
    # than the later classes can fill leads to an empty count: each part starts at what the later ones cannot
    # fill (the same options, in the same order, without enumerating the empty ones)
    avail = np.zeros((C + 1, L), dtype=np.int64)
    for i in range(C - 1, -1, -1):
        avail[i] = avail[i + 1]
        for q in range(L):
            if class_places[i, q] >= 0:
                avail[i, class_places[i, q]] += class_sizes[i]
    s = 0
    while s < n_states:
        i = layer_of[s]
        if i < C:
            P, m = 0, class_sizes[i]
            while P < L and class_places[i, P] >= 0:
                cap = states[s, class_places[i, P]]
                lo[P] = max(0, cap - avail[i + 1, class_places[i, P]])
                room[P] = cap - lo[P]
                m -= lo[P]
                P += 1
            if i == C - 1:  # the last class has one way to fill what is left, if it may go to every place left
                ok = room[:P].sum() == 0 and m == 0 and states[s].sum() == class_sizes[i]
                split[:P] = 0
            else:
                ok = m >= 0 and _fill_low(room[:P], split[:P], np.int64(0), m)
            while ok:
                nxt[:] = states[s]
                mult, rest = 1.0, class_sizes[i]
                for q in range(P):
                    nxt[class_places[i, q]] -= split[q] + lo[q]
                    mult *= binom[rest, split[q] + lo[q]]
                    rest -= split[q] + lo[q]
                key = _state_key(i + 1, nxt, base)
                if key not in ids:
                    ids[key] = n_states
                    if n_states == len(layer_of):
                        return _overflow(L)
                    states[n_states] = nxt
                    layer_of[n_states] = i + 1
                    n_states += 1
                if n_opts == len(o_from):
                    return _overflow(L)
                o_from[n_opts], o_to[n_opts], o_mult[n_opts] = s, ids[key], mult
                o_split[n_opts] = 0
                for q in range(P):
                    o_split[n_opts, class_places[i, q]] = split[q] + lo[q]
                n_opts += 1
                ok = i < C - 1 and _next_split(room[:P], split[:P])
        s += 1
    return _cumulate(states[:n_states], layer_of[:n_states], C, o_from[:n_opts], o_to[:n_opts], o_split[:n_opts],
                     o_mult[:n_opts])


@njit(cache=True, nogil=True)
def _cumulate(states, layer_of, C, o_from, o_to, o_split, o_mult):
    """The counts backwards (a state's options lead to later states; each state's sum in option order) and
    the kept options' cumulated probabilities (:func:`_count_table`)."""
    S, K, L = states.shape[0], len(o_from), states.shape[1]
    first = np.zeros(S + 1, dtype=np.int64)
    for k in range(K):
        first[o_from[k] + 1] = k + 1
    for s in range(S):
        first[s + 1] = max(first[s + 1], first[s])
    totals = np.zeros(S)
    weight = np.zeros(K)
    for s in range(S - 1, -1, -1):
        if layer_of[s] == C:
            totals[s] = 1.0 if states[s].sum() == 0 else 0.0
        for k in range(first[s], first[s + 1]):
            weight[k] = o_mult[k] * totals[o_to[k]]
            totals[s] += weight[k]
    opt_start = np.zeros((S, 2), dtype=np.int64)
    opt_cum = np.empty(K)
    opt_next = np.empty(K, dtype=np.int64)
    opt_split = np.empty((K, L), dtype=np.int64)
    n = 0
    for s in range(S):
        opt_start[s, 0] = n
        acc = 0.0
        for k in range(first[s], first[s + 1]):
            if totals[o_to[k]] > 0:
                acc += weight[k]
                opt_cum[n] = acc / totals[s]
                opt_next[n] = o_to[k]
                opt_split[n] = o_split[k]
                n += 1
        opt_start[s, 1] = n
    return opt_start, opt_cum[:n].copy(), opt_next[:n].copy(), opt_split[:n].copy(), totals[0]


# --- the determinizer of one information set ----------------------------------------------------------
class Determinizer:
    """The information set of ``player`` in ``game`` (a rules object or a tarot AEC env), built once;
    ``sample(n, rng)`` draws worlds from it. ``count()`` is the number of consistent assignments of
    the unknown cards to the hidden places when there are no predicate conditions (tests).

    The real game is checked once, here (``check_state``: it may come from outside, loaded or edited); the
    worlds drawn from it are consistent by construction (each unknown card dealt to exactly one hidden place
    of its public size, the rest copied from the checked row) and are not checked again, neither when drawn
    nor when a search loads them (``VecEnv.load_rows``); ``tests/test_sampler.py`` checks them
    (``check_state`` of every world, the brute-force and chi-square tests)."""

    def __init__(self, game_or_env, player, *, max_tries: int = 1000):
        game = game_of(game_or_env)
        seat = _seat(game, player)
        if game.game_over:
            raise ValueError(f"the {game.name} game is over: there is nothing to sample (start a new game)")
        game.check_state()  # a corrupt state (a card twice, hand sizes off the phase): ValueError saying so
        self.game, self.seat, self.max_tries = game, seat, int(max_tries)
        self.stats = {"worlds": 0, "rejected": 0, "fallback": 0}
        builder = {"partita": _PartitaView, "ottocento": _OttocentoView, "millone": _MilloneView}[game.name]
        self.view = builder(game, seat)
        self.cases = self.view.cases  # list of (Places, place names); a mixture when several
        self.case_weights = [c.weight() for c, _ in self.cases]
        if not sum(self.case_weights):
            raise ValueError(f"no deal is consistent with what seat {seat} knows (a corrupt state?)")

    def count(self) -> int:
        """The consistent assignments (exact up to 2**53, :meth:`Places.count`)."""
        return int(round(sum(self.case_weights)))

    def sample(self, n: int, rng: np.random.Generator) -> list[TrickGame]:
        """``n`` worlds as games (clones of the real one), drawn as :meth:`sample_rows` draws them."""
        n = _check_n(n)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
        rows = self.sample_rows(n, rng)
        return [self.view.world(rows, i) for i in range(n)]

    def sample_rows(self, n: int, rng: np.random.Generator):
        """``n`` worlds written straight into the rows of a state of the game's engine (``PartitaRows``,
        ``MilloneRows``, ``OttocentoRows``: the real game's row, each copy with the hidden places dealt again
        by one compiled walk per case and written by the game's ``write_rows``: Millone's and Ottocento's one
        compiled call for all the rows; its random stream reseeded from ``rng``), for a search that steps them
        in a batched engine. Where the information set has a condition that is not rectangular (OTT-5.5,
        MIL-3), the rows that fail it are drawn again, up to ``max_tries`` times (``stats``: ``rejected``;
        a row still failing keeps its last draw and counts in ``fallback``)."""
        n = _check_n(n)
        rows = self.game.row.tiled(n)
        todo = np.arange(n)
        for _try in range(self.max_tries):
            self._draw(rows, todo, rng)
            failed = todo[~self.view.accept_rows(rows, todo)]
            self.stats["rejected"] += len(failed)
            todo = failed
            if not len(todo):
                break
        else:
            self.stats["fallback"] += len(todo)
        rows.streams.reseed(np.arange(n), rng.integers(2**63, size=n, dtype=np.uint64))  # unknown future deals
        self.stats["worlds"] += n
        return rows

    def _draw(self, rows, todo: np.ndarray, rng: np.random.Generator) -> None:
        """Rows ``todo`` dealt again: a case each (by its weight), then one compiled walk per case."""
        case = (rng.choice(len(self.cases), size=len(todo), p=np.array(self.case_weights) / sum(self.case_weights))
                if len(self.cases) > 1 else np.zeros(len(todo), dtype=np.int64))
        for c, (places, names) in enumerate(self.cases):
            at = todo[case == c]
            if len(at):
                self.view.write_rows(rows, at, names, places.sample_bits(len(at), rng), rng)


def sample_worlds(game_or_env, player, n: int, rng: np.random.Generator, *,
                  max_tries: int = 1000) -> list[TrickGame]:
    """``n`` complete game states (cloned rules objects) drawn uniformly among those consistent with
    what ``player`` (a seat or ``"player_k"``) knows in ``game_or_env`` (a rules object or a tarot AEC
    env). See the module docstring. ``ValueError`` for an unknown player, a finished game or a bad ``n``.
    """
    n = _check_n(n)
    return Determinizer(game_or_env, player, max_tries=max_tries).sample(n, rng)


# --- per game: the unknown cards, the places and their conditions (public facts + own cards only) -----
class _View:
    """Shared by the three games: the known cards, the voids, a new world with the hidden places
    overwritten. A subclass sets ``self.cases`` and fills ``_write``."""

    def __init__(self, game: TrickGame, seat: int):
        self.game, self.seat, self.sets = game, seat, game.card_sets()  # (card sets)
        self.voids = game.shown_void  # the public voids the engine keeps (B.4.1-B.4.3, H.1.1: seat x 4 suits, trumps)

    def hand_allowed(self, s: int) -> np.ndarray:
        """Cards seat ``s`` may hold: none of a suit (4 suits, trumps) it has shown void in (B.4.1, B.4.2)."""
        voids = np.asarray(self.voids[s], dtype=bool).tobytes()
        key = (self.game.pack.key, voids)
        if key not in _ALLOWED:  # (one entry per pack and pattern of voids, shared: read-only)
            _ALLOWED[key] = a = ~np.frombuffer(voids + b"\0", dtype=bool)[self.game.pack.suit]  # (the Fool: never)
            a.setflags(write=False)
        return _ALLOWED[key]

    def unknown_from(self, known: int) -> np.ndarray:
        """The card ids not in the card set ``known``, in increasing order."""
        return np.flatnonzero(~unpack_cards(np.uint64(known), self.game.pack.size))

    def build(self, assignment: dict, rng: np.random.Generator) -> TrickGame:
        """The world of one assignment ``{place name: card ids}``: a clone with the hidden places written
        (by :meth:`write_rows`, the one writer) and its future deals unknown too."""
        rows, names = self.game.row.tiled(1), list(assignment)
        bits = np.array([[sum(1 << int(c) for c in assignment[nm]) for nm in names]], dtype=np.uint64)
        self.write_rows(rows, _ROW0, names, bits, rng)
        rows.streams.reseed(_ROW0, rng.integers(2**63, size=1, dtype=np.uint64))
        return self.world(rows, 0)

    def world(self, rows, i: int) -> TrickGame:
        """World ``i`` of ``rows`` (``Determinizer.sample_rows``) as a game: a clone holding that row."""
        w = self.game.clone()
        row = rows.take(np.array([i]))
        if hasattr(w.row, "one_row"):  # (Ottocento: a one-row game's row calls its kernels directly)
            row.one_row = w.row.one_row
        w.row = row
        self._blank_history(w)
        return w

    def write_rows(self, rows, at: np.ndarray, names: list, bits: np.ndarray, rng: np.random.Generator) -> None:
        """Assignments ``bits[i]`` (a card set per place of ``names``) into rows ``at`` of ``rows``."""
        raise NotImplementedError

    def accept_rows(self, rows, at: np.ndarray) -> np.ndarray:
        """bool[len(at)]: which of rows ``at`` meet the conditions that are not rectangular (none here)."""
        return np.ones(len(at), dtype=bool)

    def _blank_history(self, w: TrickGame) -> None:
        """The hidden discards of finished deals are not known either (H.3–H.5): blank the others'."""
        for i, h in enumerate(w.history):
            d = h.get("discards")
            if not d:
                continue
            if isinstance(d[0], list):  # Millone: one list per seat
                w.history[i] = dict(h, discards=[x if p == self.seat else [] for p, x in enumerate(d)])
            elif h.get("dealer") != self.seat:
                w.history[i] = dict(h, discards=[])


_ALLOWED: dict = {}  # (pack key, voids): the cards a seat may hold (:meth:`_View.hand_allowed`)
_ROW0 = np.zeros(1, dtype=np.int64)  # (the one row of a one-row array; writable: a read-only array is another
# numba type, so the kernels it is passed to would be compiled twice)


def _seed(rng: np.random.Generator) -> int:
    """A seed for a compiled kernel's random stream (numba's ``np.random``), drawn from ``rng``."""
    return int(rng.integers(2**31))


@njit(cache=True, nogil=True)
def _set_ids(x, ids):
    """The cards of the card set ``x`` into ``ids`` in increasing order; returns how many."""
    n, c = 0, 0
    while x:
        if x & np.uint64(1):
            ids[n] = c
            n += 1
        x >>= np.uint64(1)
        c += 1
    return n


@njit(cache=True, nogil=True)
def _shuffle(ids, lo, hi):
    """``ids[lo:hi]`` in a uniformly random order (Fisher-Yates on the kernel's seeded stream)."""
    for j in range(hi - 1, lo, -1):
        k = np.random.randint(lo, j + 1)
        ids[j], ids[k] = ids[k], ids[j]


@njit(cache=True, nogil=True)
def _deal_one(deck, row, positions, x, ids):
    """``deck[row, positions]`` := the cards of the set ``x`` in a uniformly random order."""
    n = _set_ids(x, ids)
    if n != len(positions):
        raise ValueError("a card set does not fit its deck positions")
    _shuffle(ids, 0, n)
    for j in range(n):
        deck[row, positions[j]] = ids[j]


@njit(cache=True, nogil=True)
def _millone_deal_kernel(deck, disc_log, at, q, disc, dealt, stock, first, second, stock_pos, unseen, n_first_discard,
                         seed):
    """:meth:`_MilloneView.write_rows`' random orders, row ``at[i]`` by row: seat ``q``'s hidden discards
    (``disc[i]``) in a random order into ``disc_log``; before the stock is dealt, his first packets (positions
    ``first``) get ``dealt[i]`` (his hand and discards) and the stock positions ``stock[i]``, each in a random
    order; after it, his first ``n_first_discard`` discards are among his first packets (MIL-2.4), the rest of
    those and his second packets (``second``) are the cards the player was not dealt (``unseen``), less those
    discards, dealt at random (MIL-2.2, MIL-2.5)."""
    np.random.seed(seed)
    ids, rest, packets = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    stock_positions = np.arange(stock_pos, deck.shape[1])
    k = len(first) - n_first_discard  # the first packets' cards besides the first discards
    for i in range(len(at)):
        b = at[i]
        n = _set_ids(disc[i], ids)
        _shuffle(ids, 0, n)
        for j in range(n):
            disc_log[b, q, j] = ids[j]
        if len(stock_positions):
            _deal_one(deck, b, first, dealt[i], rest)
            _deal_one(deck, b, stock_positions, stock[i], rest)
            continue
        must = np.uint64(0)
        for j in range(n_first_discard):
            must |= np.uint64(1) << np.uint64(ids[j])
            packets[j] = ids[j]
        m = _set_ids(unseen & ~must, rest)
        if m != k + len(second):
            raise ValueError("the unseen cards do not fit the opponent's deck positions")
        _shuffle(rest, 0, m)
        for j in range(k):
            packets[n_first_discard + j] = rest[j]
        _shuffle(packets, 0, len(first))
        for j in range(len(first)):
            deck[b, first[j]] = packets[j]
        for j in range(len(second)):
            deck[b, second[j]] = rest[k + j]


class _PartitaView(_View):
    """Partita (PAR-4, PAR-5; H.5): the other three hands and the dealer's hidden discards."""

    def __init__(self, game, seat):
        super().__init__(game, seat)
        from .rules import partita as R

        self.R, sets, hand_sizes = R, self.sets, game.hand_sizes
        self.dealer = d = game.dealer
        public = int(game.row.sets[0, R.PUBLIC])
        known = sets["hands"][seat] | card_union(sets["played"]) | public
        others = [s for s in range(4) if s != seat]
        names, sizes = [R.HANDS + s for s in others], [hand_sizes[s] for s in others]  # (a place: its card set)
        allowed = [self.hand_allowed(s) for s in others]
        cases = [(names, sizes, allowed)]
        if seat == d:
            known |= sets["discards"][seat]
        else:
            discarding = game.phase == R.Phase.DISCARD
            made = R.HAND_SIZE + R.DEALER_EXTRA - hand_sizes[d] if discarding else R.DISCARD_SIZE
            names.append(R.DISCARDS + d)
            sizes.append(made - public.bit_count())
            allowed.append(R.PLAIN_DISCARDABLE)  # a hidden discard is never a trump (PAR-4.5)
        if seat != d and public:
            # PAR-4.4: a trump was discarded, so the dealer held fewer than two plain discardable cards: after
            # the discard none is left in his hand. In the middle of it (one trump announced, none hidden) he
            # holds at most one: two cases, each rectangular, the second with a place of its own for that card
            k = others.index(d)
            plain = allowed[k] & R.PLAIN_DISCARDABLE
            allowed[k] = allowed[k] & ~R.PLAIN_DISCARDABLE
            if discarding and sizes[-1] == 0 and sizes[k] >= 1:
                one = list(sizes)
                one[k] -= 1
                cases.append((names + [R.HANDS + d], one + [1], allowed + [plain]))
        self.cases = [(Places(self.unknown_from(known), list(sz), np.array(al)), nm) for nm, sz, al in cases]

    def write_rows(self, rows, at: np.ndarray, names: list, bits: np.ndarray, rng: np.random.Generator) -> None:
        """Assignments ``bits[i]`` (a card set per place, ``names``: the row's card sets) into rows ``at``: the
        other hands, the dealer's discards (the announced trumps and the drawn ones), and PAR-4.4 the trumps
        he had to discard, from the cards he was dealt."""
        R, d, sets = self.R, self.dealer, rows.sets
        for k in set(names):
            sets[at, k] = sets[at, R.PUBLIC] if k == R.DISCARDS + d else 0
        for j, k in enumerate(names):
            sets[at, k] |= bits[:, j]
        if self.seat != d:
            dealt = sets[at, R.HANDS + d] | sets[at, R.DISCARDS + d] | sets[at, R.PLAYED + d]
            rows.trumps_needed[at] = R.discard_trumps_needed_many(dealt)


@functools.cache
def _ottocento_positions(R, d: int, a_monte: bool) -> tuple[np.ndarray, np.ndarray]:
    """The deck positions of each seat's cards, dealer ``d`` (OTT-2.1, 2.2: ``R.DEAL_TO``; during the *a monte*
    question only the first round's), as ``(int64[4, longest], their counts int64[4])``."""
    seat_of = (d + R.DEAL_TO[:R.PACKET * R.PLAYERS if a_monte else R.N]) % R.PLAYERS
    out = np.full((4, R.MAX_HELD), -1, dtype=np.int64)
    counts = np.zeros(4, dtype=np.int64)
    for s in range(4):
        pos = np.flatnonzero(seat_of == s)
        out[s, :len(pos)], counts[s] = pos, len(pos)
    return out, counts


@njit(cache=True, nogil=True)
def _ottocento_write_kernel(xbits, hbits, deck, at, bits, hand_col, disc_col, undealt_col, dealer, seat, held, played,
                            discarded, hands0, positions, counts, undealt, seed):
    """:meth:`_OttocentoView.write_rows`, row ``at[i]`` by row: the hands (seat ``s``'s drawn cards
    ``bits[i, hand_col[s]]`` and its declared cards still held, ``held[s]``; the player's own, ``hand_col`` -1,
    as they are) as card sets (``hbits``), the dealer's drawn discards (``disc_col``, -1: none drawn) as his
    card set (``xbits``), and the deck: each other seat's positions
    (``positions[s, :counts[s]]``) get its dealt cards in a random order, the undealt positions (``undealt``) the
    drawn rest (``undealt_col``, -1: none)."""
    np.random.seed(seed)
    ids = np.empty(64, dtype=np.int64)
    hands, discards = np.empty(4, dtype=np.uint64), np.empty(4, dtype=np.uint64)
    for i in range(len(at)):
        b = at[i]
        discards[:] = discarded
        for s in range(4):  # (the player's own hand and the others' public discards are the tiled row's)
            hands[s] = hands0[s]
            if hand_col[s] >= 0:
                hands[s] = held[s] | bits[i, hand_col[s]]
                hbits[b, s] = hands[s]
        if disc_col >= 0:
            discards[dealer] = xbits[b, dealer] = bits[i, disc_col]
        for s in range(4):
            if s != seat:
                _deal_one(deck, b, positions[s, :counts[s]], hands[s] | played[s] | discards[s], ids)
        if undealt_col >= 0:
            _deal_one(deck, b, undealt, bits[i, undealt_col], ids)


class _OttocentoView(_View):
    """Ottocento (OTT-2–OTT-8; H.3): the other hands less their declared cards, the dealer's hidden
    discards, and during the *a monte* question the undealt rest of the deck."""

    def __init__(self, game, seat):
        super().__init__(game, seat)
        from .rules import ottocento as R

        self.R, g = R, game
        d = g.dealer
        hands, played, discards = self.sets["hands"], self.sets["played"], self.sets["discards"]
        declared = g.row.dbits[0].tolist()
        phase, hand_sizes = g.phase, g.hand_sizes
        known = hands[seat] | card_union(played) | card_union(declared)
        if seat == d:
            known |= discards[seat]
        others = [s for s in range(4) if s != seat]
        names = [("hand", s) for s in others]
        sizes = [hand_sizes[s] - (declared[s] & ~played[s]).bit_count() for s in others]  # less the declared held
        allowed = [self.hand_allowed(s) for s in others]
        if phase == R.Phase.A_MONTE:
            names.append(("undealt",))
            sizes.append(R.N - R.PACKET * R.PLAYERS)  # OTT-2.1: 20 cards dealt so far
            allowed.append(np.ones(R.N, dtype=bool))
        elif seat != d:
            made = R.DISCARD_SIZE if phase != R.Phase.DISCARD else R.MAX_HELD - hand_sizes[d]
            names.append(("discards", d))
            sizes.append(made)
            allowed.append(R.DISCARDABLE)  # OTT-4.2: never a 5-point card
        self.cases = [(Places(self.unknown_from(known), sizes, np.array(allowed)), names)]
        # OTT-5.5: the cards revealed so far by another player declaring now can still be completed
        self.declaring, self.dealer = phase == R.Phase.DECLARE, int(d)
        self.check_declarer = self.declaring and g.current != seat
        self.revealed = g.row.dbits[0, g.current]  # OTT-5.5: the declaring seat's
        self.positions = _ottocento_positions(R, d, phase == R.Phase.A_MONTE)
        self.undealt = np.arange(R.PACKET * R.PLAYERS, R.N, dtype=np.int64)  # OTT-2.1: after the first round
        # the public card sets write_rows starts from (uint64[4]): the declared cards still in hand, the
        # played cards, the discards (the player's own; the others' are drawn), the hands (ditto)
        self.held, self.played_bits, self.discarded_bits, self.hand_bits = np.array(
            [[x & ~y for x, y in zip(declared, played)], played, discards, hands], dtype=np.uint64)

    def write_rows(self, rows, at: np.ndarray, names: list, bits: np.ndarray, rng: np.random.Generator) -> None:
        """Assignments ``bits[i]`` (a card set per place of ``names``) into rows ``at`` of ``rows``: the
        other hands (their declared cards kept), the dealer's discards, the deck (the player's own positions
        stay: he saw his packets; the others' are refilled in a random order), and in the declarations
        every seat's M(hand) (OTT-5.1)."""
        d = self.dealer
        col = {nm: j for j, nm in enumerate(names)}
        hand_col = np.array([col.get(("hand", s), -1) for s in range(4)], dtype=np.int64)
        at = np.asarray(at, dtype=np.int64)
        _ottocento_write_kernel(rows.xbits, rows.hbits, rows.deck, at, np.ascontiguousarray(bits, dtype=np.uint64),
                                hand_col, col.get(("discards", d), -1), col.get(("undealt",), -1), d, self.seat,
                                self.held, self.played_bits, self.discarded_bits, self.hand_bits,
                                *self.positions, self.undealt, _seed(rng))
        if self.declaring:
            rows.reload_declarable(at)

    def accept_rows(self, rows, at: np.ndarray) -> np.ndarray:
        """OTT-5.5: the seat declaring now (not the player) can still complete what it has revealed."""
        if not self.check_declarer:
            return super().accept_rows(rows, at)
        return self.revealed & ~rows.mhand[at, self.game.current] == 0


@functools.cache
def _millone_positions(R, d: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The deck positions of each seat's first and second packets, dealer ``d`` (MIL-2.2, MIL-2.5: the rules'
    ``FIRST_TO`` / ``SECOND_TO``, 0 = the non-dealer), as ``(first, second)``, each a pair of int64 arrays
    (seat 0's, seat 1's)."""
    def of(to: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
        return tuple(start + np.flatnonzero(to == (s == d)) for s in (0, 1))  # (writable: see _ROW0)
    return of(R.FIRST_TO, 0), of(R.SECOND_TO, R.FIRST_N)


@njit(cache=True, nogil=True)
def _deck_sets(deck, at, positions, out):
    """``out[i]`` := the card set at ``positions`` of row ``at[i]`` of ``deck``."""
    for i in range(len(at)):
        x = np.uint64(0)
        for p in positions:
            x |= np.uint64(1) << np.uint64(deck[at[i], p])
        out[i] = x


class _MilloneView(_View):
    """Millone (MIL-2–MIL-4; H.4): the opponent's hand, his hidden discards and the stock."""

    def __init__(self, game, seat):
        super().__init__(game, seat)
        from .rules import millone as R

        self.R, sets, g = R, self.sets, game
        self.q = q = 1 - seat
        known = sets["hands"][seat] | sets["discards"][seat] | card_union(sets["played"]) | card_union(sets["won"])
        if g.exchange_card >= 0:  # the card paid for the Matto (public, decision 2)
            known |= 1 << g.exchange_card
        # MIL-4.3 (v1): a Matto payment during the play comes from the payer's cards won in tricks,
        # which are public, and an owed payment says only that those held no empty card; neither
        # tells anything about the hidden discards (they join the pile at the end of the hand)
        names, sizes = [("hand", q), ("discards", q)], [g.hand_sizes[q], len(g.discarded[q])]
        allowed = [self.hand_allowed(q), R.DISCARDABLE]  # MIL-2.4: no Honours, no Kings
        self.stock_pos, self.stock_dealt = g.stock_pos, g.stock_pos == R.N
        if not self.stock_dealt:  # the stock is still there (its size is public)
            names.append(("stock",))
            sizes.append(R.N - g.stock_pos)
            allowed.append(np.ones(R.N, dtype=bool))
        self.cases = [(Places(self.unknown_from(known), sizes, np.array(allowed)), names)]
        self.first, second = _millone_positions(R, int(g.dealer))
        self.first_q, self.second_q = self.first[q], second[q]
        deck = np.asarray(g.deck, dtype=np.int64)[None, :]
        own_first, own_second = np.zeros(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64)
        _deck_sets(deck, _ROW0, self.first[seat], own_first)  # the cards he was dealt (his own knowledge)
        _deck_sets(deck, _ROW0, second[seat], own_second)
        dealt = own_first[0] | (own_second[0] if self.stock_dealt else np.uint64(0))
        self.unseen = np.uint64((1 << R.N) - 1) & ~dealt  # the cards he was not dealt
        # MIL-3: his own first-phase cards' combinations (the same in every world)
        self.own_first_points = int(R.combos.combo_points_many(
            own_first, moors_double_count=game.config.moors_double_count)[0])

    def write_rows(self, rows, at: np.ndarray, names: list, bits: np.ndarray, rng: np.random.Generator) -> None:
        """Assignments ``bits[i]`` (a card set per place of ``names``) into rows ``at`` of ``rows``: the
        opponent's hand, his discards (in a random order) and the stock, and the deck: his positions refilled
        in a random order (MIL-2.2, MIL-2.5; his first discards came from his first packets, MIL-2.4)."""
        R, q = self.R, self.q
        col = {nm: j for j, nm in enumerate(names)}
        hand, disc = bits[:, col[("hand", q)]], bits[:, col[("discards", q)]]
        rows.hand_bits[at, q] = hand
        rows.disc_bits[at, q] = disc
        stock = np.zeros(len(at), dtype=np.uint64)
        if not self.stock_dealt:
            stock = np.ascontiguousarray(bits[:, col[("stock",)]])
            rows.stock_bits[at] = stock
        _millone_deal_kernel(rows.deck, rows.disc_log, np.asarray(at, dtype=np.int64), q, np.ascontiguousarray(disc),
                             hand | disc, stock,
                             self.first_q, self.second_q, self.stock_pos, self.unseen, R.FIRST_DISCARD, _seed(rng))

    def accept_rows(self, rows, at: np.ndarray) -> np.ndarray:
        """MIL-3: the hand goes on, so neither first-phase hand claimed the game (``claimants``)."""
        R, q, seat = self.R, self.q, self.seat
        first = np.zeros(len(at), dtype=np.uint64)
        _deck_sets(rows.deck, np.asarray(at, dtype=np.int64), self.first_q, first)
        points = np.empty((len(at), 2), dtype=np.int64)
        points[:, q] = R.combos.combo_points_many(first, moors_double_count=self.game.config.moors_double_count)
        points[:, seat] = self.own_first_points
        return R.claimants(rows.scores[at] + points) < 0
