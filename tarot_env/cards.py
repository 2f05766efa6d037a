"""Cards: the two packs, their trick ranks, counting values and short names.

Every card of a pack has an integer id ``0 .. size-1``. The id is also the card's action id in every
phase of every game (discard, declaration, play), as in OpenSpiel's Hearts. Cards are listed trumps
first (highest to lowest), then the excuse (Matto / Fool), then each suit from its strongest card to
its weakest, so a hand printed in id order is already sorted the way a player holds it.

Each card has a short name that parses back exactly (``pack.parse(pack.name(c)) == c``): the Bolognese
pack's 62 (RULES.md B.1) and the French-suited pack's 54 (RULES.md E.1) are listed in docs/rules/README.md,
"Card names used in the code".

Arrays (one entry per card id) give each card's suit, its trick strength, whether it belongs to the
equal-rank group where the last played wins (the Moors, B.2.2; trumps I–V, PAR-2.2) and its
counting value (B.3.1 for the Bolognese pack; PAR-6.1 for the French-suited pack). Rules code works
on these tables, never on names.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Suit indices shared by both packs. Suit cards use 0..3; trumps and the excuse have their own.
TRUMP = 4
EXCUSE = 5


@dataclass(frozen=True, eq=False)
class Pack:
    """A pack of cards: names and per-card tables, built once and shared read-only."""

    key: str
    names: tuple[str, ...]
    suit: np.ndarray  # int8[N]: 0..3 suits, TRUMP, EXCUSE
    strength: np.ndarray  # int16[N]: higher beats lower within a suit or among trumps
    equal_group: np.ndarray  # bool[N]: trumps of equal rank (the last played of them wins)
    value: np.ndarray  # int16[N]: counting value of the game family that uses this pack
    suit_names: tuple[str, ...]
    excuse: int  # card id of the Matto / Fool
    _index: dict = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.names)

    def name(self, card: int) -> str:
        return self.names[card]

    def parse(self, name: str) -> int:
        """Card id of a short name; raises ``ValueError`` listing the valid names otherwise."""
        try:
            return self._index[name.strip()]
        except KeyError:
            raise ValueError(
                f"unknown card name {name!r} for the {self.key} pack; valid names: {' '.join(self.names)}"
            ) from None

    def parse_many(self, text: str | list[str]) -> list[int]:
        """Card ids of a whitespace-separated list of names (or a list of names)."""
        items = text.split() if isinstance(text, str) else list(text)
        return [self.parse(n) for n in items]

    def names_of(self, cards) -> list[str]:
        """Names of card ids; accepts an iterable of ids or a boolean array over the pack."""
        arr = np.asarray(cards)
        if arr.dtype == bool and arr.shape == (self.size,):
            arr = np.flatnonzero(arr)
        return [self.names[int(c)] for c in arr]

    def mask(self, cards) -> np.ndarray:
        """Boolean array over the pack with the given ids (or names) set."""
        out = np.zeros(self.size, dtype=bool)
        for c in cards:
            out[self.parse(c) if isinstance(c, str) else int(c)] = True
        return out


def _build(key, entries, suit_names, excuse_name) -> Pack:
    """entries: (name, suit, strength, equal_group, value) in id order."""
    names = tuple(e[0] for e in entries)
    assert len(set(names)) == len(names), "card names must be unique"

    def arr(i, dtype):
        a = np.array([e[i] for e in entries], dtype=dtype)
        a.setflags(write=False)
        return a

    return Pack(key, names, suit=arr(1, np.int8), strength=arr(2, np.int16), equal_group=arr(3, bool),
                value=arr(4, np.int16), suit_names=suit_names, excuse=names.index(excuse_name),
                _index={n: i for i, n in enumerate(names)})


# ---------------------------------------------------------------------------------------------
# The 62-card Bolognese pack (RULES.md B.1, B.2, B.3)
# ---------------------------------------------------------------------------------------------

def _bolognese() -> Pack:
    e = []
    # B.1.2 trumps, highest first. Strength = rank key; the four Moors share key 1 (B.2.2).
    top = [("Angel", 20), ("World", 19), ("Sun", 18), ("Moon", 17)]
    numbered = [(f"T{k}", k) for k in range(16, 4, -1)]
    moors = [(f"Moor{i}", 1) for i in range(1, 5)]
    for name, key in top + numbered + moors + [("Begato", 0)]:
        value = 5 if name in ("Angel", "World", "Begato") else 1  # B.3.1
        e.append((name, TRUMP, key, name.startswith("Moor"), value))
    e.append(("Matto", EXCUSE, -1, False, 5))  # B.1.3, B.3.1
    court_value = {"K": 5, "Q": 4, "C": 3, "J": 2}
    # B.2.3: round suits K Q C J A 6 7 8 9 10; long suits K Q C J 10 9 8 7 6 A (strongest first)
    round_order = ["K", "Q", "C", "J", "A", "6", "7", "8", "9", "10"]
    long_order = ["K", "Q", "C", "J", "10", "9", "8", "7", "6", "A"]
    for s, letter in enumerate("DCSB"):  # coins, cups (round); swords, batons (long)
        order = round_order if s < 2 else long_order
        for i, r in enumerate(order):
            e.append((r + letter, s, 10 - i, False, court_value.get(r, 1)))
    return _build("bolognese", e, ("coins", "cups", "swords", "batons", "trumps", "Matto"), "Matto")


# ---------------------------------------------------------------------------------------------
# The 54-card French-suited pack of Partita (RULES.md E.1, E.2, E.6)
# ---------------------------------------------------------------------------------------------

ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "XIII", "XIV",
         "XV", "XVI", "XVII", "XVIII", "XIX", "XX", "XXI"]


def _french54() -> Pack:
    e = []
    for n in range(21, 0, -1):  # PAR-2.1/2.2: XXI > … > VI; I–V equal (strength 1) and lowest
        equal = n <= 5
        value = 4 if n in (1, 21) else 0  # PAR-6.1
        e.append((ROMAN[n - 1], TRUMP, 1 if equal else n, equal, value))
    e.append(("Fool", EXCUSE, -1, False, 0))  # PAR-6.3 counts the Fool apart (5)
    court_value = {"K": 4, "Q": 3, "C": 2, "V": 1}
    black = ["K", "Q", "C", "V", "10", "9", "8", "7"]  # PAR-2.3
    red = ["K", "Q", "C", "V", "A", "2", "3", "4"]
    for s, letter in enumerate("SCDH"):
        order = black if s < 2 else red
        for i, r in enumerate(order):
            e.append((r + letter, s, 8 - i, False, court_value.get(r, 0)))
    return _build("french54", e, ("spades", "clubs", "diamonds", "hearts", "trumps", "Fool"), "Fool")


BOLOGNESE = _bolognese()
FRENCH54 = _french54()
