"""A state that comes from outside is checked before it is used (issue #33): ``TrickGame.from_dict``,
``VecEnv.load_games`` and the sampler refuse a state the rules cannot reach, saying what is wrong, and
change nothing.

What every reachable state holds (``TrickGame.state_problems``): each card of the pack exactly once in
a hand, a discard, a won pile, the trick (B.1, PAR-1), the Millone stock (MIL-2.5) or the undealt rest of
an Ottocento deck (OTT-2.1, 2.3); hand sizes equal to the hands and fitting the phase (PAR-4.1, 4.2,
OTT-2.1, 2.2, 4.1, MIL-4.1); the played cards are the piles and the trick; the deck a permutation.
Before this check, a Partita game with a card in two hands loaded through ``from_dict`` and
``load_games`` and scored 79 points instead of 80.
"""
from __future__ import annotations

import numpy as np
import pytest

from agents.play.human import new_game
from tarot_env.sampler import Determinizer
from tarot_env.vector import make_vec

OPTIONS = [("partita", {}), ("partita", {"partita_signals": "bolognese3", "deals_per_game": 1}),
           ("millone", {}), ("millone", {"max_hands": 1}),
           ("ottocento", {}), ("ottocento", {"a_monte": "ask_all", "max_hands": 2}),
           ("ottocento", {"a_monte": "off", "target_score": 20})]


def positions(game: str, options: dict, games: int, seed: int = 0):
    """Every state of ``games`` seeded random games (the finished one included)."""
    rng = np.random.default_rng(seed)
    for s in range(games):
        g = new_game(game, seed * 1000 + s, options)
        while True:
            yield g
            if g.game_over:
                break
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])


def mid_play(game: str, seed: int = 3, moves: int = 40):
    """A game in the middle of its card play (a clone), with cards in hands, piles and on the trick."""
    for g in positions(game, {}, 50, seed):
        if g.phase.name == "PLAY" and len(g.tricks) >= 3 and g.trick:
            return g.clone()
    raise AssertionError("no mid-play position")


@pytest.mark.parametrize("game,options", OPTIONS, ids=[f"{g}-{i}" for i, (g, _) in enumerate(OPTIONS)])
def test_B_1_PAR_1_OTT_2_MIL_2_every_reachable_state_passes_the_check(game, options):
    n = 0
    for g in positions(game, options, 15):
        assert g.state_problems() == [], (game, options, g.phase)
        n += 1
    assert n > 300


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_H_6_sampled_worlds_are_reachable_states(game):
    rng = np.random.default_rng(1)
    n = 0
    for i, g in enumerate(positions(game, {"a_monte": "ask_all"} if game == "ottocento" else {}, 4, seed=5)):
        if g.game_over or i % 7:
            continue
        for w in Determinizer(g, g.current).sample(2, rng):
            assert w.state_problems() == [], (game, g.phase)
            n += 1
    assert n > 40


def set_card(g, field: str, i: int, card: int, value: bool = True) -> None:
    """Edit a card of a game's state behind the rules' back: a Partita game's row holds its cards as card
    sets (``PartitaRows.sets``), a Millone game's row as card sets per field (``MilloneRows.hand_bits``
    ...), the other games' rules objects as bool arrays."""
    if g.name == "millone":
        sets = {"hands": g.row.hand_bits, "won": g.row.won_bits, "discards": g.row.disc_bits}[field]
        bit = np.uint64(1) << np.uint64(card)
        sets[0, i] = (sets[0, i] | bit) if value else (sets[0, i] & ~bit)
    elif g.name == "ottocento":  # its row holds the hands, won piles and discards as card sets
        sets = {"hands": g.row.hbits, "won": g.row.wbits, "discards": g.row.xbits}[field]
        bit = np.uint64(1) << np.uint64(card)
        sets[0, i] = (sets[0, i] | bit) if value else (sets[0, i] & ~bit)
    elif hasattr(g, "row"):
        from tarot_env.rules import partita as R

        first = {"hands": R.HANDS, "won": R.WON, "discards": R.DISCARDS}[field] + i
        bit = np.uint64(1) << np.uint64(card)
        g.row.sets[0, first] = (g.row.sets[0, first] | bit) if value else (g.row.sets[0, first] & ~bit)
    else:
        getattr(g, field)[i, card] = value


def set_scalar(g, name: str, value, i: int | None = None) -> None:
    """``g.<name> = value`` (or ``g.<name>[i] = value``), in a Partita or Millone game's row or a rules object."""
    if hasattr(g, "row"):
        arr = getattr(g.row, name)
        arr[(0, i) if i is not None else 0] = value
    elif i is not None:
        getattr(g, name)[i] = value
    else:
        setattr(g, name, value)


def _card_in_two_hands(g):
    """Copy a card of the next seat's hand into the acting seat's hand too."""
    other = (g.current + 1) % g.num_players
    card = int(np.flatnonzero(g.hands[other])[0])
    set_card(g, "hands", g.current, card)
    return card, other


def test_PAR_1_a_card_in_two_hands_is_refused_by_from_dict_load_games_and_the_sampler():
    g = mid_play("partita")
    bad = g.clone()
    card, other = _card_in_two_hands(bad)
    name = bad.pack.names[card]
    want = f"card {name} is in hands[{min(bad.current, other)}] and hands[{max(bad.current, other)}]"
    with pytest.raises(ValueError, match=want.replace("[", r"\[").replace("]", r"\]")):
        type(g).from_dict(bad.to_dict())
    v = make_vec("partita", 2, seed=0)
    before = v.reset().obs.copy()
    sets = v.sets.copy()
    with pytest.raises(ValueError, match=r"load_games: games\[1\] is not a state the rules can reach: card "):
        v.load_games([g, bad])
    assert np.array_equal(v.sets, sets) and np.array_equal(v._obs, before)  # nothing changed
    v.load_games([g, g])  # the good one loads
    with pytest.raises(ValueError, match="inconsistent partita state: card"):
        Determinizer(bad, bad.current)
    type(g).from_dict(g.to_dict()).check_state()  # a good state goes through


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
@pytest.mark.parametrize("corrupt,phrase", [
    ("twice", "is in hands"),
    ("nowhere", "is in no hand, discard, pile or trick"),
    ("hand_size", "hand_sizes"),
    ("won_and_hand", "is in hands"),
    ("seat", "current = 9 is not a seat"),
])
def test_B_1_corrupt_states_are_refused_naming_what_is_wrong(game, corrupt, phrase):
    g = mid_play(game)
    bad = g.clone()
    if corrupt == "twice":
        _card_in_two_hands(bad)
    elif corrupt == "nowhere":
        card = int(np.flatnonzero(bad.hands[bad.current])[0])
        set_card(bad, "hands", bad.current, card, False)
    elif corrupt == "hand_size":
        set_scalar(bad, "hand_sizes", bad.hand_sizes[0] + 1, 0)
    elif corrupt == "won_and_hand":
        card = int(np.flatnonzero(bad.won.any(axis=0))[0])
        set_card(bad, "hands", bad.current, card)
    else:
        set_scalar(bad, "current", 9)
    with pytest.raises(ValueError, match=f"inconsistent {game} state: .*{phrase}"):
        type(g).from_dict(bad.to_dict())
    with pytest.raises(ValueError, match="not a state the rules can reach"):
        make_vec(game, 1, seed=0).load_games([bad])


@pytest.mark.parametrize("game", ["millone", "ottocento"])
def test_MIL_2_2_OTT_2_1_a_deck_that_is_not_a_permutation_is_refused(game):
    bad = mid_play(game)
    if game == "ottocento":  # the deck is the row's
        bad.row.deck[0, 0] = bad.row.deck[0, 1]
    else:
        bad.deck = bad.deck.copy()
        bad.deck[0] = bad.deck[1]
    with pytest.raises(ValueError, match="the deck is not a permutation"):
        type(bad).from_dict(bad.to_dict())


def test_PAR_4_1_hand_counts_must_fit_the_phase():
    g = mid_play("partita")
    bad = g.clone()
    # a card of the acting seat's hand moved to its partner's: every card still once, hand_sizes kept in step
    card = int(np.flatnonzero(bad.hands[bad.current])[0])
    seat, partner = bad.current, (bad.current + 2) % 4
    set_card(bad, "hands", seat, card, False)
    set_card(bad, "hands", partner, card)
    sizes = bad.hand_sizes
    set_scalar(bad, "hand_sizes", sizes[seat] - 1, seat)
    set_scalar(bad, "hand_sizes", sizes[partner] + 1, partner)
    with pytest.raises(ValueError, match=r"phase PLAY means .* \(PAR-4.1\)"):
        type(g).from_dict(bad.to_dict())
