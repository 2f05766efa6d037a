"""RULES.md H.1.1 (table memory, environments v1): the public voids and the signals' card and trick stay
in the observation, in every game; the v1 sections are appended after the v0 ones (H.1.1, issue #13).

The oracles below rebuild the expected sections from the rules object's public history (``tricks``,
``trick``, ``signals``), not from the incremental state the encoders read.
"""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from tarot_env.cards import BOLOGNESE, EXCUSE, TRUMP
from tarot_env.config import make_config
from tarot_env.engine import NUM_SIGNALS, Signal
from tarot_env.rules import millone, ottocento, partita
from tarot_env.rules.millone import MilloneGame
from tarot_env.rules.ottocento import OttocentoConfig, OttocentoGame
from tarot_env.rules.partita import PartitaConfig, PartitaGame

GAMES = {"partita": partita, "millone": millone, "ottocento": ottocento}
assert sorted(GAMES) == sorted(tarot_env.GAMES)  # the oracles below know every game
_id = BOLOGNESE.parse


# --- oracles from the public history ------------------------------------------------------------------

def voids_from_history(g) -> np.ndarray:
    """bool[P, 5]: B.4.1-B.4.2 read off this hand's tricks: a card not of the suit led (the excuse
    aside) shows that suit is gone, and a plain one shows no trumps either."""
    suit = g.pack.suit
    v = np.zeros((g.num_players, 5), dtype=bool)
    for trick in [t for t, _ in g.tricks] + [g.trick]:
        led = None
        for seat, card in trick:
            s = suit[card]
            if s == EXCUSE:
                continue
            if led is None:
                led = s
            elif s != led:
                v[seat, led] = True
                if s != TRUMP:
                    v[seat, TRUMP] = True
    return v


def played_trick_from_history(g) -> np.ndarray:
    """float32[n]: (t + 1) / tricks for a card played in trick t of this hand, else 0."""
    out = np.zeros(g.pack.size)
    for t, trick in enumerate([t for t, _ in g.tricks] + [g.trick]):
        for _, card in trick:
            out[card] = (t + 1) / g.hand_size
    return out.astype(np.float32)


def signal_cards_from_history(g) -> np.ndarray:
    out = np.zeros((g.pack.size, NUM_SIGNALS), dtype=np.float32)
    for _, card, sig in g.signals:
        out[card, sig] = 1.0
    return out


def check_table_memory(g) -> int:
    """Every seat's v1 sections (and the state's) equal the oracles; returns the number of facts seen."""
    mod = GAMES[g.name]
    OBS, STATE, P = mod.OBS, mod.STATE, g.num_players
    voids = voids_from_history(g)
    for seat in range(P):
        o = g.observation(seat)
        rel = [(seat + i) % P for i in range(P)]
        assert np.array_equal(o[OBS.shown_void].reshape(P, 5) > 0, voids[rel]), seat
        if "signal_cards" in OBS.offsets:
            assert np.array_equal(o[OBS.signal_cards], signal_cards_from_history(g).ravel()), seat
            assert np.array_equal(o[OBS.played_trick], played_trick_from_history(g)), seat
    s = g.state_vector()  # full information for critics: the same public sections, absolute seats
    assert np.array_equal(s[STATE.shown_void].reshape(P, 5) > 0, voids)
    if "signal_cards" in STATE.offsets:
        assert np.array_equal(s[STATE.signal_cards], signal_cards_from_history(g).ravel())
        assert np.array_equal(s[STATE.played_trick], played_trick_from_history(g))
    return int(voids.sum()) + len(g.signals)


def play_out(g, rng, signal_p: float = 0.5, steps: int = 100_000) -> int:
    """Random play (a signal with probability ``signal_p`` where legal), checking every decision."""
    facts = 0
    n = g.pack.size
    for _ in range(steps):
        if g.game_over:
            break
        facts += check_table_memory(g)
        legal = g.legal_actions()
        sig = [a for a in legal if n <= a < n + NUM_SIGNALS]
        if sig and rng.random() < signal_p:
            g.apply(sig[rng.integers(len(sig))])
        else:
            cards = [a for a in legal if a < n or a >= n + NUM_SIGNALS]
            g.apply(cards[rng.integers(len(cards))])
    return facts


# --- the layout: the v0 sections keep their offsets -----------------------------------------------------

@pytest.mark.parametrize("game", sorted(GAMES))
def test_H_1_1_new_sections_are_appended_after_the_v0_layout(game):
    mod = GAMES[game]
    names = [n for n, _ in mod.OBS.sections]
    v0_end = names.index("phase") + 1  # every v0 layout ends with the phase one-hot
    assert mod.OBS.phase.stop == mod.OBS_V0_SIZE and mod.STATE.phase.stop == mod.STATE_V0_SIZE
    assert set(names[v0_end:]) <= {"shown_void", "signal_cards", "played_trick",
                                    "pile_combos", "combo_gain"}  # (v2 of Ottocento and Millone: after the v1 ones)
    assert mod.OBS_V0_SIZE == {"partita": 818, "millone": 700, "ottocento": 1164}[game]
    assert mod.STATE_V0_SIZE == {"partita": 1142, "millone": 888, "ottocento": 1536}[game]
    assert (mod.OBS.size, mod.STATE.size) == {"partita": (1034, 1358), "millone": (836, 898),
                                              "ottocento": (1558, 1804)}[game]


# --- public voids (H.1.1) ----------------------------------------------------------------------------

def _millone_deck(non_dealer: list[str], dealer: list[str]) -> list[int]:
    """A MIL-2.2/2.5 deck order dealing ``non_dealer`` (30 names) and ``dealer`` (32) in that order:
    four rounds of 5 (the dealer 7 in the last), then the stock, two rounds of 5 each."""
    nd, d = [_id(c) for c in non_dealer], [_id(c) for c in dealer]
    deck = []
    for r in range(4):
        deck += nd[5 * r:5 * r + 5]
        deck += d[5 * r:5 * r + (7 if r == 3 else 5)]
    for r in range(2):
        deck += nd[20 + 5 * r:25 + 5 * r]
        deck += d[22 + 5 * r:27 + 5 * r]
    return deck


def _millone_after(history: list[str]) -> MilloneGame:
    """Seat 0 (non-dealer, leads) holds every trump and the coins but 7D; seat 1 holds 7D, the Matto
    and the 30 cups, swords and batons: no trumps and a single coin. Both discard without touching
    the cards of the test; then ``history`` is played."""
    trumps = [n for n in BOLOGNESE.names if BOLOGNESE.suit[_id(n)] == TRUMP]
    coins = [n for n in BOLOGNESE.names if n.endswith("D") and n != "7D"]
    others = [n for n in BOLOGNESE.names if n[-1] in "CSB" and n != "Matto"]
    x = ["6D", "T5"] + [c for c in coins if c != "6D"] + [t for t in trumps if t != "T5"]
    y = ["7D", "8S", "Matto"] + [c for c in others if c != "8S"]
    g = MilloneGame(seed=0, first_dealer=1)
    g.set_deck(1, _millone_deck(x, y))
    keep = {_id(c) for c in ("6D", "T5", "7D", "8S")}
    while g.phase != millone.Phase.PLAY:
        g.apply(next(a for a in g.legal_actions() if a not in keep))
    assert not (g.hands[1] & (BOLOGNESE.suit == TRUMP)).any() and g.hands[1, _id("7D")]
    for name in history:
        g.apply(_id(name))
    return g


def test_H_1_1_millone_a_void_shown_by_not_following_changes_the_observation():
    # A: 6D 7D (seat 1 follows), then T5 8S (no trumps). B: T5 7D, then 6D 8S: seat 1 showed it has
    # no coins. The same cards are played, taken and held in both: only the voids tell them apart.
    a = _millone_after(["6D", "7D", "T5", "8S"])
    b = _millone_after(["T5", "7D", "6D", "8S"])
    OBS = millone.OBS
    assert np.array_equal(a.hands, b.hands) and np.array_equal(a.won, b.won) and a.current == b.current == 0
    for seat in (0, 1):
        oa, ob = a.observation(seat), b.observation(seat)
        assert not np.array_equal(oa, ob), seat
        differ = np.flatnonzero(oa != ob)
        row = 1 - seat  # seat 1's row in seat's view (seat-relative: row 0 is me, row 1 the opponent)
        assert differ.tolist() == [OBS.shown_void.start + 5 * row + int(BOLOGNESE.suit[_id("7D")])], seat
        assert ob[OBS.shown_void].reshape(2, 5)[row, TRUMP] == oa[OBS.shown_void].reshape(2, 5)[row, TRUMP] == 1
    assert np.array_equal(a.observation(0)[:millone.OBS_V0_SIZE], b.observation(0)[:millone.OBS_V0_SIZE])


def test_H_1_1_a_void_shown_in_trick_2_is_still_observed_at_trick_10():
    a = _millone_after(["6D", "7D", "T5", "8S"])
    b = _millone_after(["T5", "7D", "6D", "8S"])
    coins = BOLOGNESE.suit[_id("7D")]
    while len(b.tricks) < 10:  # the same moves in both; seat 0 leads trumps, so seat 1 never faces coins again
        assert np.array_equal(a.legal_mask(), b.legal_mask())
        legal = b.legal_actions()
        act = next((c for c in legal if BOLOGNESE.suit[c] == TRUMP), legal[0]) if b.current == 0 else legal[-1]
        a.apply(act)
        b.apply(act)
    assert len(b.tricks) == 10
    assert b.observation(0)[millone.OBS.shown_void].reshape(2, 5)[1, coins] == 1
    assert a.observation(0)[millone.OBS.shown_void].reshape(2, 5)[1, coins] == 0
    assert b.state_vector()[millone.STATE.shown_void].reshape(2, 5)[1, coins] == 1


@pytest.mark.parametrize("game", sorted(GAMES))
def test_H_1_1_voids_and_signals_equal_the_public_history_at_every_decision(game):
    rng = np.random.default_rng(3)
    facts = 0
    for seed in range(3):
        if game == "partita":
            g = PartitaGame(PartitaConfig(partita_signals="bolognese3", deals_per_game=2), seed=seed)
        elif game == "ottocento":
            g = OttocentoGame(make_config(OttocentoConfig, {"ott_signal_players": "all", "target_score": 300}),
                              seed=seed)
        else:
            g = MilloneGame(seed=seed)
        facts += play_out(g, rng, steps=1500)
    assert facts > 200  # voids and signals were really shown (the test can fail)


def test_H_1_1_the_excuse_shows_no_void():
    g = _millone_after(["T5", "Matto"])  # seat 1 has no trumps, but the Matto proves nothing
    assert not g.observation(0)[millone.OBS.shown_void].any()
    g = _millone_after(["T5", "7D"])
    assert g.observation(0)[millone.OBS.shown_void].reshape(2, 5)[1].tolist() == [0, 0, 0, 0, 1]


# --- signals: which card, which trick (H.1.1, OTT-8.2, PAR-7.1) ------------------------------------------

def test_H_1_1_a_second_signal_of_a_kind_in_a_suit_and_its_trick_stay_visible():
    """Every card goes with WIN_AND_RETURN (everyone may signal): the v0 table (seat x signal x suit) holds
    one bit per suit, the v1 sections tell each signal's card and trick, trick after trick."""
    g = OttocentoGame(make_config(OttocentoConfig, {"ott_signal_players": "all", "a_monte": "off"}), seed=5)
    n, OBS = g.pack.size, ottocento.OBS
    win = n + int(Signal.WIN_AND_RETURN)
    while g.phase != ottocento.Phase.PLAY:
        g.apply(g.legal_actions()[-1] if g.phase == ottocento.Phase.DECLARE else g.legal_actions()[0])
    seen = []  # (card, trick) of every signal so far
    while len(g.tricks) < 12:
        if g.pending_signal < 0:
            g.apply(win)
            continue
        card = g.legal_actions()[0]
        seen.append((card, len(g.tricks)))
        g.apply(card)
        o = g.observation((g.current + 2) % 4)  # anyone's view: the partner of the next player
        sc = o[OBS.signal_cards].reshape(n, NUM_SIGNALS)
        pt = o[OBS.played_trick]
        for c, t in seen:  # every earlier signal: its card and its trick
            assert sc[c, Signal.WIN_AND_RETURN] == 1 and sc[c].sum() == 1
            assert pt[c] == np.float32((t + 1) / 15)
        assert sc.sum() == len(seen)
    suits = [BOLOGNESE.suit[c] for c, _ in seen]
    repeated = max(suits.count(s) for s in set(suits))
    assert repeated >= 3  # many signals in one suit ...
    v0 = g.observation(0)[OBS.signals].reshape(4, NUM_SIGNALS, 6)
    assert v0[:, Signal.WIN_AND_RETURN].sum() < len(seen)  # ... that the v0 table folds together


def test_H_1_1_partita_signal_timing_and_card_in_every_view():
    g = PartitaGame(PartitaConfig(partita_signals="bolognese3"), seed=2)
    n, OBS = partita.N, partita.OBS
    while g.phase == partita.Phase.DISCARD:
        g.apply(g.legal_actions()[0])
    for _ in range(3):  # tricks 1-3 without signals
        for _ in range(4):
            g.apply(g.legal_actions()[0])
    g.apply(n + int(Signal.VOID))
    card = g.legal_actions()[0]
    g.apply(card)
    for _ in range(4 * 4 - 1):  # four more tricks (legal_actions()[0] is a card: cards come first)
        g.apply(g.legal_actions()[0])
    assert len(g.tricks) >= 7
    for seat in range(4):
        o = g.observation(seat)
        assert o[OBS.signal_cards].reshape(n, NUM_SIGNALS)[card].tolist() == [1, 0, 0]
        assert o[OBS.played_trick][card] == np.float32(4 / 13)  # given in the 4th trick
        assert o[OBS.signal_cards].sum() == 1


# --- H.6 for the v1 sections ----------------------------------------------------------------------------

@pytest.mark.parametrize("game", sorted(GAMES))
def test_H_6_v1_sections_unchanged_when_unseen_cards_are_redealt(game):
    """The whole-observation leak tests of the env test files cover the v1 sections too; this one checks
    the v1 sections alone, and that they were non-empty when it checked them (so it can fail)."""
    if game == "partita":
        from test_partita_env import redeal_unseen
        g = PartitaGame(PartitaConfig(partita_signals="bolognese3"), seed=4)
    elif game == "ottocento":
        from test_ottocento_env import redeal_unseen
        g = OttocentoGame(make_config(OttocentoConfig, {"ott_signal_players": "all", "target_score": 300}), seed=4)
    else:
        from test_millone import redeal_unseen
        g = MilloneGame(seed=4)
    mod = GAMES[game]
    tail = slice(mod.OBS_V0_SIZE, mod.OBS.size)
    rng = np.random.default_rng(0)
    nonempty = 0
    for _ in range(600):
        if g.game_over:
            break
        if rng.random() < 0.3:
            for observer in range(g.num_players):
                h = redeal_unseen(g, observer, rng)
                o = g.observation(observer)
                assert np.array_equal(h.observation(observer)[tail], o[tail]), observer
                nonempty += bool(o[tail].any())
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    assert nonempty > 20
