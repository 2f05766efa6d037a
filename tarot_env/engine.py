"""What the three games share, as the base of their one-row games (``PartitaGame``, ``MilloneGame``,
``OttocentoGame``; each game's rules are kernels over rows in ``tarot_env/rules/<game>.py``, issue #33).

:class:`TrickGame` holds no rule: a game's class facts, seats (``next_seat`` is
the player to the right, B.1), action names and parsing, ``check_action`` and ``check_state`` (B.1, PAR-1),
and the suit led and legal cards through :mod:`tarot_env.kernels` (B.4). The signal sections' encoding
(H.1.1) is explained in docs/environments.md.
"""
from __future__ import annotations

import functools
import operator
from enum import IntEnum
from typing import Any, ClassVar

import numpy as np
from numba import typeof
from numba.core.typing.typeof import Purpose

from .cards import Pack
from .config import Config
from .kernels import NO_SUIT, legal_play, play_tables, trick_winner_index


class Signal(IntEnum):
    """The three public signals of Ottocento (OTT-8.1), also Partita's optional set (PAR-7.1)."""

    VOID = 0  # throwing the card up: "I'm now void in this suit"
    LEAD_TRUMPS = 1  # drawing the card back: "you should lead with trumps"
    WIN_AND_RETURN = 2  # knocking the table: "win with your highest card and lead this suit back"


NUM_SIGNALS = len(Signal)
SIGNAL_NAMES = tuple(f"signal:{s.name}" for s in Signal)


def trick_winner(pack: Pack, trick: list[tuple[int, int]]) -> int:
    """Seat that wins ``trick`` (``(seat, card)`` pairs in play order) under B.4.4 / PAR-2, by the kernel
    ``trick_winner_index`` (-1: no card but the excuse)."""
    t = play_tables(pack)
    at = trick_winner_index(t.beats, t.n, np.array([card for _, card in trick], dtype=np.int64))
    return trick[at][0] if at >= 0 else -1


class CardTables:
    """A pack's suit masks and compiled card-play tables (:func:`tarot_env.kernels.play_tables`), built once."""

    def __init__(self, pack: Pack):
        self.suit = [np.asarray(pack.suit == s) for s in range(6)]  # suits 0..3, TRUMP, EXCUSE
        self.play = play_tables(pack)
        self.led_after = self.play.led_after.tolist()  # [led * N + card] -> suit led after it (plain ints)
        for a in self.suit:
            a.setflags(write=False)


class TrickGame:
    """Base class of a game's one-row game (docs/architecture.md, "Adding a game"). Subclasses set the class
    constants and the phases; the state is the row (``self.row``), and ``hands[p, c]``, ``played``, ``trick``,
    ``won[t, c]``, ``discards``, ``signals``, ``leader``, ``current``, ``scores[t]`` … are views of it (seats
    absolute, ``0 .. players-1``; teams ``t``)."""

    # --- constants a subclass declares ----------------------------------------------------------
    name: ClassVar[str] = "base"
    pack: ClassVar[Pack]
    num_players: ClassVar[int]
    team_of: ClassVar[tuple[int, ...]]  # seat -> team
    num_teams: ClassVar[int]
    hand_size: ClassVar[int]  # cards in each hand when the play starts (= tricks per hand)
    num_actions: ClassVar[int]
    Phase: ClassVar[type[IntEnum]]
    Config: ClassVar[type[Config]]
    Rows: ClassVar[type]  # the game's rows class (``<Game>Rows(num_rows, config)``); the game holds one row
    # observation sections whose values may exceed 1: name -> the space's upper bound (else [0, 1])
    OBS_HIGH: ClassVar[dict[str, float]] = {}

    def __init__(self, config: Config | None = None, seed: int | None = None, first_dealer: int | None = None):
        """A new game of ``config`` (the default options if None), its random stream seeded from ``seed``; the
        first dealer ``first_dealer``, else the config's, else (-1) chosen at random (PAR-3.3, MIL-2.1, OTT-1.2);
        then the first deal (:meth:`_first_deal`)."""
        config = config if config is not None else self.Config()
        self._setup(config, [], self.Rows(1, config))
        rng = np.random.default_rng(seed)
        if first_dealer is None:
            first_dealer = config.first_dealer
        if first_dealer < 0:
            first_dealer = int(rng.integers(self.num_players))  # PAR-3.3, MIL-2.1, OTT-1.2: chosen at random
        self.row.streams.load([0], [rng])  # the game's stream goes on in the row's arrays
        self._first_deal(first_dealer)

    def _first_deal(self, dealer: int) -> None:
        """The game's first deal, by ``dealer`` (Partita's ``start_deal``, Millone's ``start_hand`` ...)."""
        raise NotImplementedError  # pragma: no cover - each game's own

    # --- seats ------------------------------------------------------------------------------------
    def next_seat(self, seat: int) -> int:
        return (seat + 1) % self.num_players

    def partner(self, seat: int) -> int:
        return (seat + 2) % self.num_players

    # --- card play (shared by every game's PLAY phase) --------------------------------------------
    def led_suit(self) -> int | None:
        """Suit the current trick must follow, or None (nothing but the excuse so far, B.4.3): the
        kernels' ``led_after`` table, card by card, as the batched engines read it."""
        t = self.tables
        led, n = NO_SUIT, t.play.n
        for _, card in self.trick:
            led = t.led_after[led * n + card]
        return None if led == NO_SUIT else led

    def legal_cards(self, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """Cards ``seat`` may play now (B.4.1–B.4.3): follow, else trump, else anything; excuse always.
        The rule itself is :func:`tarot_env.kernels.legal_play` on the hand's card set, shared with the
        batched engines. Written into ``out`` (``bool[pack size]``) when given."""
        led, t = self.led_suit(), self.tables.play
        legal = (t.bit & legal_play(t.to_bits(self.hands[seat]), NO_SUIT if led is None else led, t.suit_bits)) != 0
        if out is None:
            return legal
        out[...] = legal
        return out

    # --- the public driver API --------------------------------------------------------------------
    @property
    def current_player(self) -> int:
        return -1 if self.game_over else self.current

    def legal_mask(self) -> np.ndarray:
        """Boolean mask over the action space of the player to act (all False when the game is over)."""
        raise NotImplementedError

    def legal_actions(self) -> list[int]:
        return [int(a) for a in np.flatnonzero(self.legal_mask())]

    @classmethod
    def action_name(cls, action: int) -> str:
        """The name of an action id: the card's name, ``signal:VOID`` …, or a game's extra action."""
        n = cls.pack.size
        if 0 <= action < n:
            return cls.pack.names[action]
        if n <= action < n + NUM_SIGNALS:
            return SIGNAL_NAMES[action - n]
        return cls._extra_action_name(action)

    @classmethod
    def _extra_action_name(cls, action: int) -> str:
        return f"action{action}"

    def parse_action(self, text: str) -> int:
        """Action id of a name (card name, ``signal:VOID`` …) or a number; ValueError otherwise."""
        text = text.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        for a in range(self.num_actions):
            if self.action_name(a).lower() == text.lower():
                return a
        return self.pack.parse(text)

    def check_action(self, action) -> int:
        """Validate ``action`` for the player to act; raise ValueError naming it and the legal ones."""
        if self.game_over:
            raise ValueError(f"the {self.name} game is over; no action is legal (call reset)")
        try:
            a = int(action)
            if a != action:
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError(f"action {action!r} is not an integer action id of {self.name}") from None
        if not 0 <= a < self.num_actions:
            raise ValueError(
                f"action {a} is out of range for {self.name}: ids are 0..{self.num_actions - 1}; "
                f"legal now: {self.describe_legal()}"
            )
        if not self.legal_mask()[a]:
            raise ValueError(
                f"illegal action {a} ({self.action_name(a)}) for seat {self.current} in phase "
                f"{self.phase.name}; legal now: {self.describe_legal()}"
            )
        return a

    @classmethod
    def result_view(cls, result: dict[str, Any], seat: int) -> dict[str, Any]:
        """What ``seat`` knows of a finished deal's record ``result`` (a ``history`` entry; the AEC env's
        ``info["last_result"]``), RULES.md H: everything but the dealer's discards, of which another seat
        knows only those ``discard_shown`` (Partita's announced trumps, PAR-4.5; none in Ottocento, OTT-4.1).
        ``"discards"`` lists the known ones and ``"discards_hidden"`` counts the others; the score parts are
        public. Applying it again to its own output changes nothing. (Millone's records hold both players'
        discards: its own override.)"""
        view = dict(result)
        if "discards" in result:
            known = [c for c in result["discards"] if seat == result["dealer"] or cls.discard_shown(c)]
            view["discards"] = known
            view["discards_hidden"] = result.get("discards_hidden", 0) + len(result["discards"]) - len(known)
        return view

    @staticmethod
    def discard_shown(card: int) -> bool:
        """Whether the dealer's discard ``card`` is shown to the other seats (:meth:`result_view`): no."""
        return False

    def describe_legal(self) -> str:
        return ", ".join(f"{a}={self.action_name(a)}" for a in self.legal_actions())

    def apply(self, action: int) -> None:
        """Apply a legal action of the player to act (validated; the state is unchanged on error)."""
        self.apply_unchecked(self.check_action(action))

    def apply_unchecked(self, action: int) -> None:
        """Apply an action already known to be legal (drivers that hold the mask skip the check)."""
        raise NotImplementedError

    # --- views of the row every one-row game shares -------------------------------------------------
    phase = property(lambda self: self.Phase(int(self.row.phase[0])))
    scores = property(lambda self: self.row.scores[0], doc="int64[teams]: the game score of each side (the row's)")
    tricks_won = property(lambda self: self.row.tricks_won[0])
    hand_sizes = property(lambda self: self.row.hand_sizes[0].tolist())
    # the game's random stream (the next deals and games) as a numpy Generator: a copy; set: the row takes its state
    rng = property(lambda self: self.row.streams.generator(0), lambda self, g: self.row.streams.load_into(0, g))

    # --- serialisation: the row's arrays (a one-row game holds ``self.row``, a ``<Game>Rows``) ---------
    STATE_FORMAT: ClassVar[int] = 2  # format 1 was the rules objects' attributes, before issue #33
    RESULT_FIELDS: ClassVar[tuple[str, ...]] = ("winner", "game_over")  # the game's result, besides history

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-able dict of the whole state (the row's arrays, the record, the config)."""
        return {"game": self.name, "format": self.STATE_FORMAT, "config": self.config.to_dict(),
                "row": {k: v[0].tolist() for k, v in self.row.arrays().items()},
                "history": _encode(self.history), **{k: getattr(self, k) for k in self.RESULT_FIELDS}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrickGame:
        """Rebuild a game from ``to_dict()`` output. A state of another game or format, an array of the
        wrong type or shape, or a state the rules cannot reach (:meth:`check_state`) raises ``ValueError``
        saying what is wrong."""
        if not isinstance(data, dict) or data.get("game") != cls.name:
            got = data.get("game") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"this state is of game {got!r}, not {cls.name!r}")
        if data.get("format") != cls.STATE_FORMAT:
            raise ValueError(f"unknown {cls.name} state format {data.get('format')!r}; this version reads format "
                             f"{cls.STATE_FORMAT} (format 1 was the rules object's before the one-engine rewrite)")
        from .config import make_config

        new = cls._restored(make_config(cls.Config, data["config"]), _decode(data["history"]))
        new.winner = data.get("winner")
        for k in cls.RESULT_FIELDS[1:]:
            setattr(new, k, bool(data.get(k, False)))
        new._load_row(data.get("row"))
        new.check_state()
        return new

    @classmethod
    def _restored(cls, config: Config, history: list) -> TrickGame:
        """An empty one-row game of ``config`` with ``history``, for :meth:`from_dict` to fill."""
        return object.__new__(cls)._setup(config, history, cls.Rows(1, config))

    def clone(self) -> TrickGame:
        """A copy: the config, the result and what a caller attached; a row, a record (its entries are never
        changed in place) and scratch of its own."""
        new = object.__new__(type(self))._setup(self.config, list(self.history), self.row.copy(),
                                                tuple(getattr(self, k) for k in self.RESULT_FIELDS))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in new.__dict__})
        return new

    def _setup(self, config: Config, history: list, row: Any, result: tuple = (None, False, False)) -> TrickGame:
        """The game's fields (``config``, ``history``, the ``RESULT_FIELDS`` from ``result``, the row ``row``
        and the kernels' scratch); returns the game."""
        raise NotImplementedError  # pragma: no cover - each game's own

    def _load_row(self, row: Any) -> None:
        """The row's arrays from ``to_dict()["row"]``, each checked (names, dtype, shape) before any is set."""
        arrays = self.row.arrays()
        if not isinstance(row, dict) or set(row) != set(arrays):
            raise ValueError(f"a {self.name} state's 'row' must hold {sorted(arrays)}")
        values = {}
        for k, a in arrays.items():
            try:
                values[k] = v = np.asarray(row[k], dtype=a.dtype)  # exact: JSON ints to uint64 card sets
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"a {self.name} state's {k} is not an array of {a.dtype}") from None
            if v.shape != a.shape[1:]:
                raise ValueError(f"a {self.name} state's {k} has shape {v.shape}, expected {a.shape[1:]}")
        for k, v in values.items():
            arrays[k][0] = v

    # --- a state from outside is checked before it is used -----------------------------------------
    TRICK_COUNT: ClassVar[str] = "tricks"  # the row's count of the finished tricks of this deal (``len(tricks)``)

    def card_sets(self) -> dict[str, list[int] | int]:
        """The places a card can be, as card sets (Python ints, bit ``c``: card ``c``): ``hands``, ``discards``,
        ``won``, ``trick_by`` (one set per seat or team) and ``played`` (not a place), and a game's other places
        (the Millone stock, the undealt rest of an Ottocento deck: its ``_row_sets``). B.1, PAR-1."""
        full = (1 << self.pack.size) - 1
        return {k: [x & full for x in v] if isinstance(v, list) else v & full for k, v in self._row_sets().items()}

    def phase_problems(self, sets: dict) -> list[str]:
        """What a game's own phase says of the card counts (``sets``: :meth:`card_sets`, overridden per game);
        ``[]`` when they fit."""
        return []

    def state_problems(self) -> list[str]:
        """Everything inconsistent in the card state, in words (``[]`` for a state the rules can reach): each
        card in exactly one place (:meth:`card_sets`), the hand sizes, the played cards, the current trick, the
        seats, the deck, and the game's own phase counts (:meth:`phase_problems`)."""
        sets = self.card_sets()
        return self._place_problems(sets) + self._play_problems(sets) + self.phase_problems(sets)

    def _place_problems(self, sets: dict) -> list[str]:
        """B.1, PAR-1: each card in exactly one of :meth:`card_sets`; the hand sizes are the hands'."""
        names = self.pack.names
        labelled = [(f"{k.removesuffix('_by')}[{i}]", y) for k in ("hands", "discards", "won", "trick_by")
                    for i, y in enumerate(sets[k])] + [(k, v) for k, v in sets.items() if not isinstance(v, list)]
        seen, twice = _union_and_twice([x for _, x in labelled])
        out = [f"card {names[c]} is in " + " and ".join(label for label, x in labelled if x >> c & 1)
               for c in _cards_of(twice)]
        out += [f"card {names[c]} is in no hand, discard, pile or trick"
                for c in _cards_of(((1 << self.pack.size) - 1) & ~seen)]
        held = [x.bit_count() for x in sets["hands"]]
        if list(self.hand_sizes) != held:
            out.append(f"hand_sizes {list(self.hand_sizes)} but the hands hold {held} cards")
        return out

    def _play_problems(self, sets: dict) -> list[str]:
        """The played cards, the current trick, the tricks won, the seats and the deck agree."""
        n, P = self.pack.size, self.num_players
        played, trick_by, trick = sets["played"], sets["trick_by"], self.trick
        out = []
        union, twice = _union_and_twice(played)
        if twice or any(t & ~p for t, p in zip(trick_by, played)):
            out.append("a card is played by two seats, or on the trick without being played")
        if union != card_union(sets["won"]) | card_union(trick_by):
            out.append("the played cards are not the cards in the won piles and on the trick")
        if len(trick) != sum(x.bit_count() for x in trick_by) or not all(trick_by[s] >> c & 1 for s, c in trick):
            out.append(f"the trick {trick} does not match the cards on the table")
        tricks = max(0, int(getattr(self.row, self.TRICK_COUNT)[0]))
        if tricks != int(self.tricks_won.sum()):
            out.append(f"{tricks} tricks played but tricks_won is {list(self.tricks_won)}")
        for seat in ("current", "leader", "dealer"):
            v = getattr(self, seat, 0)
            if not 0 <= int(v) < P:
                out.append(f"{seat} = {v} is not a seat 0..{P - 1}")
        deck = getattr(self, "deck", None)
        if deck is not None and sorted(np.asarray(deck).tolist()) != list(range(n)):
            out.append(f"the deck is not a permutation of the {n} card ids")
        return out

    def check_state(self) -> None:
        """``ValueError`` listing what is wrong if the state is not one the rules can reach
        (:meth:`state_problems`): a loaded, edited or hand-built state is checked before it is used."""
        problems = self.state_problems()
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise ValueError(f"inconsistent {self.name} state: " + "; ".join(problems[:5]) + more)


def _union_and_twice(sets: list[int]) -> tuple[int, int]:
    """The cards in any of ``sets`` (card sets) and the cards in two or more of them."""
    seen = twice = 0
    for x in sets:
        twice |= seen & x
        seen |= x
    return seen, twice


def card_union(sets: list[int]) -> int:
    """The cards in any of the card sets ``sets``."""
    return functools.reduce(operator.or_, sets, 0)


def _cards_of(x: int) -> list[int]:
    """The cards of the card set ``x``, in increasing order."""
    return [c for c in range(x.bit_length()) if x >> c & 1]


_tables = functools.cache(CardTables)  # a pack's tables, built once


def _encode(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"__array__": v.tolist(), "dtype": str(v.dtype)}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, IntEnum):
        return int(v)
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x) for x in v]}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        if "__array__" in v:
            return np.array(v["__array__"], dtype=v["dtype"])
        if "__tuple__" in v:
            return tuple(_decode(x) for x in v["__tuple__"])
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def played_trick_table(tricks: int) -> np.ndarray:
    """float32[tricks + 1]: the ``played_trick`` feature of a card played in trick t (0-based) is
    entry ``t + 1`` = (t + 1) / tricks; entry 0 (not played) is 0. One table, rounded once, shared by
    the rules encoders and the batched engines so both give the same bits (RULES.md H.1.1)."""
    return (np.arange(tricks + 1) / tricks).astype(np.float32)


class Layout:
    """Named sections of a flat observation vector: offsets computed once, size checked on fill.

    ``Layout([("hand", 54), ("played", 4 * 54), ...])`` gives ``layout.hand`` = ``slice`` of that
    section, ``layout.size`` = the total, and ``layout.check(filled_to)`` to assert an encoder filled
    exactly the declared size.
    """

    def __init__(self, sections: list[tuple[str, int]]):
        self.sections = list(sections)
        names = [name for name, _ in self.sections]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"Layout section names must be unique; repeated: {dup}")
        stops = np.cumsum([0] + [size for _, size in self.sections]).tolist()
        self.offsets: dict[str, slice] = {n: slice(a, b) for n, a, b in zip(names, stops, stops[1:])}
        self.__dict__.update(self.offsets)
        self.size = stops[-1]

    def describe(self) -> str:
        return "\n".join(f"{s.start:5d}-{s.stop - 1:5d}  {name} ({s.stop - s.start})"
                         for name, s in self.offsets.items())


# --- a one-row game's kernel calls --------------------------------------------------------------------
_ENTRIES: dict = {}  # (kernel, the arguments' Python types) -> the compiled function numba chose


def row_number(field: str, doc: str) -> property:
    """A one-row game's view: the int ``row.<field>[0]`` of its row."""
    return property(lambda self: int(getattr(self.row, field)[0]), doc=doc)


def row_field(name: str, doc: str) -> property:
    """A one-row game's view: a read-only copy of ``row.field(name)[0]`` (its rows' field ``name``: a card set as
    ``bool[..., cards]``, a table, an array of the row)."""
    def get(self) -> np.ndarray:
        out = self.row.field(name)[0].copy()
        out.setflags(write=False)
        return out
    return property(get, doc=doc)


def logged_tricks(row) -> list[tuple[list[tuple[int, int]], int]]:
    """A one-row game's finished tricks of the deal under way, ``([(seat, card), ...], winner)``, from its row's
    trick log (``log_seat``, ``log_card``, ``log_winner``, ``tricks``: Partita's and Millone's rows)."""
    return [([(int(s), int(c)) for s, c in zip(row.log_seat[0, t], row.log_card[0, t])], int(row.log_winner[0, t]))
            for t in range(int(row.tricks[0]))]


def written_into(out, size: int, write) -> np.ndarray:
    """``write(o)`` fills a float32[size] buffer ``o``: ``out`` itself where a kernel can take it as it is
    (float32[size], C-contiguous, writable, aligned), else a buffer of its own, copied into ``out`` (a new
    one when ``out`` is None). Returns ``out`` (or the new buffer)."""
    fits = (isinstance(out, np.ndarray) and out.shape == (size,) and out.dtype == np.float32
            and out.flags.c_contiguous and out.flags.writeable and out.flags.aligned)
    o = out if fits else np.empty(size, dtype=np.float32)
    write(o)
    if out is not None and o is not out:
        out[...] = o
        return out
    return o


def row_call(kernel, *args):
    """``kernel(*args)`` for a one-row game (the AEC env's game), whose calls pass its row's declared
    structures (``State``, tables, caches: the same field types in every row), its own scratch arrays (the
    same dtype, rank and layout at every call; an ``out`` array from outside is checked before it is
    passed) and scalars. The first call with given Python types goes through numba's dispatcher, which types
    every argument (for a declared state, 30 arrays: most of the cost of an AEC step); the compiled
    function it chose is kept, and later calls call it directly."""
    key = (kernel, *map(type, args))
    f = _ENTRIES.get(key)
    if f is not None:
        return f(*args)
    out = kernel(*args)
    cres = kernel.overloads.get(tuple(typeof(a, Purpose.argument) for a in args))
    if cres is not None:
        _ENTRIES[key] = cres.entry_point
    return out
