"""The heuristic's decisions as compiled kernels over a batch: ``decide_batch(obs, mask, game, cards, beats)``.

``agents.players.baselines.HeuristicPolicy`` is the player (its docstring lists the tactics); this module is its
decision code, one generic ``@njit`` kernel for the three games parametrised by the tables of :func:`game_tables`
(``game``: the game's constants and the offsets of the observation sections read, ``G_*`` and ``O_*``;
``cards``: per-card tables and card sets, ``C_*``; ``beats``: the trick order, ``kernels.play_tables(pack).beats``).

It reads only the observation and the mask, as a player at the table (RULES.md Part H): ``_decide`` reads
the sections it needs as card sets (int64 bitsets, bit ``c`` = card ``c``) and :func:`decide_view` decides
from them, with no allocation; a caller that has those sets from elsewhere (a search's compiled rollouts
reading the engine's rows, ``agents.players.heuristic_playouts``) calls :func:`decide_view` itself. The comments
follow the player's rules in order; "first" / "most" / "least" ties go to the lowest card id, as Python's
``min`` / ``max`` over the cards in id order do (a set's cards are walked in id order, the keys compared as
one packed integer, :func:`_key`).
"""
from __future__ import annotations

import importlib

import numpy as np
from numba import njit

from tarot_env.cards import BOLOGNESE, EXCUSE, FRENCH54, TRUMP
from tarot_env.engine import NUM_SIGNALS, Signal
from tarot_env.kernels import play_tables, popcount

PARTITA, OTTOCENTO, MILLONE = 0, 1, 2
_KINDS = {"partita": PARTITA, "ottocento": OTTOCENTO, "millone": MILLONE}
VOID, LEAD_TRUMPS, WIN_AND_RETURN = int(Signal.VOID), int(Signal.LEAD_TRUMPS), int(Signal.WIN_AND_RETURN)
NO_SIGNAL = -1
# what the heuristic does in each phase of a game (game[G_ACT + phase], by the phase's name in the rules
# module's Phase; any other phase is the card play)
ACT_PLAY, ACT_DISCARD, ACT_A_MONTE, ACT_DECLARE = range(4)
_ACTS = {"DISCARD": ACT_DISCARD, "SECOND_DISCARD": ACT_DISCARD, "A_MONTE": ACT_A_MONTE, "DECLARE": ACT_DECLARE}
MAX_PHASES = 8

# game[...]: constants of the game
(G_KIND, G_PLAYERS, G_N, G_EXCUSE, G_PARTNER, G_NUM_ACTIONS, G_A_MONTE, G_PLAY_ON, G_DECLARE_DONE,
 # offsets of the observation sections (-1: absent)
 O_HAND, O_MY_DISCARDS, O_PLAYED, O_TRICK, O_WON, O_LEADER, O_PHASE, O_PHASE_LEN, O_SIGNALS, O_PENDING,
 O_PENDING_LEN, O_PUBLIC_DISCARDS, O_EXCHANGED, O_MATTO_PAID, G_ACT) = range(24)
G_SIZE = G_ACT + MAX_PHASES
# cards[row, card]: the pack's tables; C_BEATERS and C_SETS are card sets (int64 bitsets, bit c = card c)
C_SUIT, C_STRENGTH, C_EQUAL, C_PTS, C_ACE, C_TOP, C_BEATERS, C_SETS, C_SIZE = range(9)
# cards[C_SETS, ...]: the cards of each suit (0..3, TRUMP, EXCUSE), those with points, the Kings
SET_PTS, SET_KINGS = 6, 7


def game_tables(game: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(game, cards, beats)`` for :func:`decide_batch`; raises ValueError for a game without a heuristic."""
    if game not in _KINDS:
        raise ValueError(f"no heuristic for game {game!r}; games are partita, ottocento, millone")
    m = importlib.import_module(f"tarot_env.rules.{game}")
    pack, base = (FRENCH54, 0) if game == "partita" else (BOLOGNESE, 1)
    g = np.full(G_SIZE, -1, np.int64)
    g[G_KIND], g[G_PLAYERS] = _KINDS[game], m.PLAYERS
    if game == "ottocento":
        g[G_A_MONTE], g[G_PLAY_ON], g[G_DECLARE_DONE] = m.A_MONTE, m.PLAY_ON, m.DECLARE_DONE
    g[G_ACT:] = ACT_PLAY
    for phase in m.Phase:
        g[G_ACT + phase] = _ACTS.get(phase.name, ACT_PLAY)
    n = pack.size
    g[G_N], g[G_EXCUSE], g[G_NUM_ACTIONS] = n, pack.excuse, m.NUM_ACTIONS
    g[G_PARTNER] = 2 if g[G_PLAYERS] == 4 else -1
    off = m.OBS.offsets
    for slot, name in ((O_HAND, "hand"), (O_MY_DISCARDS, "my_discards"), (O_PLAYED, "played"),
                       (O_TRICK, "trick"), (O_WON, "won"), (O_LEADER, "leader"), (O_PHASE, "phase"),
                       (O_SIGNALS, "signals"), (O_PENDING, "pending_signal"),
                       (O_PUBLIC_DISCARDS, "public_discards"), (O_EXCHANGED, "exchanged"),
                       (O_MATTO_PAID, "matto_paid")):
        if name in off:
            g[slot] = off[name].start
    g[O_PHASE_LEN] = off["phase"].stop - off["phase"].start
    assert g[O_PHASE_LEN] <= MAX_PHASES and len(m.Phase) <= MAX_PHASES
    if "pending_signal" in off:
        g[O_PENDING_LEN] = off["pending_signal"].stop - off["pending_signal"].start
    assert off["trick"].stop - off["trick"].start == g[G_PLAYERS] * n
    if "signals" in off:
        assert off["signals"].stop - off["signals"].start == g[G_PLAYERS] * NUM_SIGNALS * 6

    c = np.zeros((C_SIZE, n), np.int64)
    c[C_SUIT] = pack.suit
    c[C_STRENGTH] = pack.strength
    c[C_EQUAL] = pack.equal_group
    # points a card carries into a pile beyond a plain card: Partita's counting value (PAR-6.1), the
    # Bolognese value minus the scartino's 1 (B.3.1)
    c[C_PTS] = np.maximum(pack.value.astype(np.int64) - base, 0)
    c[C_ACE] = [pack.suit[i] < TRUMP and pack.names[i].startswith("A") for i in range(n)]
    for s in range(TRUMP):  # the strength of the suit's top card (its King), by suit
        c[C_TOP, s] = pack.strength[pack.suit == s].max()
    for i in range(n):  # the cards that beat card i if played after it (same suit higher; an equal-group trump)
        over = pack.strength > pack.strength[i]
        if pack.suit[i] == TRUMP:
            over |= (c[C_EQUAL] != 0) & (pack.strength == pack.strength[i])
        c[C_BEATERS, i] = _set(np.flatnonzero((pack.suit == pack.suit[i]) & over))
    for s in range(6):
        c[C_SETS, s] = _set(np.flatnonzero(pack.suit == s))
    c[C_SETS, SET_PTS] = _set(np.flatnonzero(c[C_PTS] > 0))
    c[C_SETS, SET_KINGS] = _set([i for i in range(n)
                                 if pack.suit[i] < TRUMP and c[C_STRENGTH, i] == c[C_TOP, pack.suit[i]]])
    assert np.abs(c[[C_STRENGTH, C_PTS]]).max() < 64  # (the decision keys pack them: _key)
    beats = np.ascontiguousarray(play_tables(pack).beats, dtype=np.bool_)
    return g, c, beats


def _set(ids) -> int:
    """The card set (bit ``c`` = card ``c``) of the card ids ``ids``."""
    return sum(1 << int(i) for i in ids)


@njit(cache=True, nogil=True)
def decide_batch(obs, mask, game, cards, beats):
    """The heuristic's action for every row: obs float32[B, O], mask bool[B, A] -> int64[B]."""
    out = np.empty(obs.shape[0], np.int64)
    trick = np.empty(2 * MAX_PLAYERS, np.int64)
    for b in range(obs.shape[0]):
        out[b] = _decide(obs[b], mask[b], game, cards, beats, trick)
    return out


# --- the view: what the heuristic reads, as card sets ---------------------------------------------
MAX_PLAYERS = 4
ONE = np.int64(1)
NONE = np.int64(-1)  # (_by_points: no suit led)


@njit(cache=True, nogil=True, _nrt=False)
def _forced(mask):
    """The one legal action, or -1 where there are more (or none)."""
    first = -1
    for a in range(mask.shape[0]):
        if mask[a]:
            if first >= 0:
                return -1
            first = a
    return first


@njit(cache=True, nogil=True, _nrt=False)
def _argmax(obs, start, length):
    """The first largest entry of a section (a one-hot's index)."""
    best = 0
    for i in range(1, length):
        if obs[start + i] > obs[start + best]:
            best = i
    return best


@njit(cache=True, nogil=True, _nrt=False)
def _set_of(x, start, length):
    """A section of ``x`` read as a card set: bit ``i`` where ``x[start + i]`` (entries > 0.5)."""
    bits = np.int64(0)
    for i in range(length):
        if x[start + i] > 0.5:
            bits |= ONE << i
    return bits


@njit(cache=True, nogil=True, _nrt=False)
def _count(x):
    """The number of cards in the set ``x``."""
    return np.int64(popcount(np.uint64(x)))


@njit(cache=True, nogil=True, _nrt=False)
def _key(a, b, c=0, d=0, e=0):
    """The tuple ``(a, b, c, d, e)`` of small integers (each in [-128, 127]: points, strengths, suit lengths,
    flags; ``game_tables`` checks the pack's) as one int64 with the same order (shorter tuples: zeros after)."""
    return ((((np.int64(a) + 128) * 256 + (np.int64(b) + 128)) * 256 + (np.int64(c) + 128)) * 256
            + (np.int64(d) + 128)) * 256 + (np.int64(e) + 128)


@njit(cache=True, nogil=True, _nrt=False)
def _pop(x):
    """The lowest card of the (non-empty) set ``x`` and the set without it: ``while x != 0: c, x = _pop(x)``
    walks a set's cards in id order."""
    return _count((x & -x) - 1), x & (x - 1)


@njit(cache=True, nogil=True, _nrt=False)
def _decide(obs, mask, game, cards, beats, trick):
    """One decision from an observation: its sections read as card sets (:func:`decide_view`).
    ``trick``: scratch int64[8]."""
    forced = _forced(mask)
    if forced >= 0:
        return forced
    n, p = game[G_N], game[G_PLAYERS]
    phase = _argmax(obs, game[O_PHASE], game[O_PHASE_LEN])
    hand = _set_of(obs, game[O_HAND], n)
    if not _plays(phase, game):
        return decide_view(phase, hand, 0, trick[:0], trick[:0], 0, 0, False, mask, game, cards, beats)
    leader = _argmax(obs, game[O_LEADER], p)
    t_len = 0
    for i in range(p):  # the trick: (relative seat, card) in play order
        r = (leader + i) % p
        c = -1
        for x in range(n):
            if obs[game[O_TRICK] + r * n + x] > 0.5:
                c = x
                break
        if c < 0:
            break
        trick[t_len], trick[MAX_PLAYERS + t_len] = r, c
        t_len += 1
    # cards seen: my hand, played, the won piles, my discards (and announced discards, exchanged cards,
    # the Matto's payment where the game shows them)
    seen = hand | _set_of(obs, game[O_MY_DISCARDS], n)
    for r in range(p):
        seen |= _set_of(obs, game[O_PLAYED] + r * n, n)
    for r in range(2):
        seen |= _set_of(obs, game[O_WON] + r * n, n)
    for slot in (O_PUBLIC_DISCARDS, O_EXCHANGED, O_MATTO_PAID):
        if game[slot] >= 0:
            seen |= _set_of(obs, game[slot], n)
    mine, partners, pending = 0, 0, False
    if game[O_SIGNALS] >= 0:
        mine = _set_of(obs, game[O_SIGNALS], NUM_SIGNALS * 6)
        if game[G_PARTNER] >= 0:
            partners = _set_of(obs, game[O_SIGNALS] + game[G_PARTNER] * NUM_SIGNALS * 6, NUM_SIGNALS * 6)
    if game[O_PENDING] >= 0:
        for i in range(game[O_PENDING_LEN]):
            pending |= obs[game[O_PENDING] + i] != 0
    return decide_view(phase, hand, seen, trick[:t_len], trick[MAX_PLAYERS:MAX_PLAYERS + t_len], mine, partners,
                       pending, mask, game, cards, beats)


@njit(cache=True, nogil=True, _nrt=False)
def _plays(phase, game):
    """Whether ``phase`` is the card play (not a monte, the declarations, the discards)."""
    return game[G_ACT + phase] == ACT_PLAY


# --- one decision ----------------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always", _nrt=False)
def _int(x):
    return np.int64(x)


@njit(cache=True, nogil=True, _nrt=False)
def decide_view(phase, hand, seen, t_seat, t_card, mine, partners, pending, mask, game, cards, beats):
    """The heuristic's action from what the acting seat sees (RULES.md Part H), as card sets (int64, bit
    ``c`` = card ``c``): the phase (the observation's ``phase`` index), my hand, the cards seen (my hand,
    played, the won piles, my discards, and the announced discards, the card exchanged, the Matto's payment
    where the game shows them), the trick so far (relative seats and cards in play order), my signals and
    my partner's (bit ``6 * signal + suit``), whether a signal is pending, and the mask. Outside the card
    play only the phase, the hand and the mask are read. The numbers are cast here (a literal ``0`` or
    ``False`` is a type of its own to numba), so every caller shares one compiled :func:`_decide_view`."""
    return _decide_view(_int(phase), _int(hand), _int(seen), t_seat, t_card, _int(mine), _int(partners),
                        _int(pending) != 0, mask, game, cards, beats)


@njit(cache=True, nogil=True, _nrt=False)
def _decide_view(phase, hand, seen, t_seat, t_card, mine, partners, pending, mask, game, cards, beats):
    forced = _forced(mask)
    if forced >= 0:
        return forced
    act = game[G_ACT + phase]
    if act == ACT_A_MONTE:
        return _a_monte(hand, mask, game, cards)
    if act == ACT_DECLARE:
        return _declare(mask, game)
    if act == ACT_DISCARD:
        return _discard(hand, mask, game, cards)
    return _play(hand, seen, t_seat, t_card, mine, partners, pending, mask, game, cards, beats)


# --- Ottocento: a monte and declarations -----------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _a_monte(hand, mask, game, cards):
    # worthless: no trump, no card with points (courts, the Matto, the top trumps)
    worthless = hand & (cards[C_SETS, TRUMP] | cards[C_SETS, SET_PTS]) == 0
    want = game[G_A_MONTE] if worthless else game[G_PLAY_ON]
    if mask[want]:
        return want
    return _first(mask, mask.shape[0])


@njit(cache=True, nogil=True, _nrt=False)
def _declare(mask, game):
    c = _first(mask, game[G_N])  # reveal every card of M(hand): the largest scoring declaration
    return c if c >= 0 else game[G_DECLARE_DONE]


@njit(cache=True, nogil=True, _nrt=False)
def _first(mask, stop):
    for a in range(stop):
        if mask[a]:
            return a
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _has(cards_set, c):
    return (cards_set >> c) & 1 != 0


@njit(cache=True, nogil=True, _nrt=False)
def _in_suit(x, s, cards):
    """The number of cards of suit ``s`` in the set ``x`` (my hand; the cards still out)."""
    return _count(x & cards[C_SETS, s])


# --- discards --------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _discard(hand, mask, game, cards):
    n = game[G_N]
    kings_held = hand & cards[C_SETS, SET_KINGS]  # the Kings I hold: their suits are protected
    kind = game[G_KIND]
    best = -1
    best_key = 0
    for c in range(n):
        if not mask[c]:
            continue
        s = cards[C_SUIT, c]
        trump = np.int64(s == TRUMP)
        pts, strength = cards[C_PTS, c], cards[C_STRENGTH, c]
        if kind == PARTITA:
            # lowest plain card from the shortest suit; counting cards only when forced
            key = _key(trump, pts, _in_suit(hand, s, cards) if not trump else 0, strength, 0)
        elif kind == OTTOCENTO:
            # bank an unprotected court (no King of its suit in hand), else a low card of a short suit
            unprotected = (not trump) and pts > 0 and kings_held & cards[C_SETS, s] == 0
            key = _key(trump, np.int64(not unprotected), -pts, _in_suit(hand, s, cards), strength)
        else:
            # millone: bank courts and aces (value and combinations are safe in the pile), empty short
            # suits, keep trumps (they win tricks)
            ace = (not trump) and cards[C_ACE, c] != 0
            key = _key(trump, -(pts + 2 * np.int64(ace)), _in_suit(hand, s, cards), strength, 0)
        if best < 0 or key < best_key:
            best, best_key = c, key
    return best if best >= 0 else _first(mask, mask.shape[0])


# --- card play -------------------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _play(hand, seen, t_seat, t_card, mine, partners, pending, mask, game, cards, beats):
    n = game[G_N]
    every = (ONE << n) - 1
    out = every & ~seen & ~(ONE << game[G_EXCUSE])  # cards still out (in other hands, hidden discards, the stock)
    legal = _set_of(mask, 0, n)
    signals_legal = False
    for a in range(n, min(n + NUM_SIGNALS, game[G_NUM_ACTIONS])):
        signals_legal |= mask[a]
    card = _choose_card(hand, legal, t_seat, t_card, out, partners, game, cards, beats)
    if signals_legal and not pending:
        sig = _signal(hand, card, out, mine, game, cards)
        if sig != NO_SIGNAL and mask[n + sig]:
            return n + sig
    return card


@njit(cache=True, nogil=True, _nrt=False)
def _beaten_by_out(c, out, cards):
    """Could a card still out beat ``c`` if played after it (same suit higher, or any trump stronger; an
    equal-group trump played later also wins)?"""
    return cards[C_BEATERS, c] & out != 0


@njit(cache=True, nogil=True, _nrt=False)
def _masters(x, out, cards):
    """The cards of the set ``x`` that no card still out beats."""
    masters = np.int64(0)
    while x != 0:
        c, x = _pop(x)
        if not _beaten_by_out(c, out, cards):
            masters |= ONE << c
    return masters


@njit(cache=True, nogil=True, _nrt=False)
def _strongest(x, cards):
    """The strongest card of the set ``x`` (the first in id order of equals), or -1."""
    best = -1
    while x != 0:
        c, x = _pop(x)
        if best < 0 or cards[C_STRENGTH, c] > cards[C_STRENGTH, best]:
            best = c
    return best


@njit(cache=True, nogil=True, _nrt=False)
def _choose_card(hand, legal, t_seat, t_card, out, partners, game, cards, beats):
    n, p, ex, partner = game[G_N], game[G_PLAYERS], game[G_EXCUSE], game[G_PARTNER]
    has_excuse = _has(legal, ex)
    cand = legal & ~(ONE << ex)  # my legal cards but the excuse
    if cand == 0:
        return ex
    if t_card.shape[0] == 0:
        return _lead(hand, cand, out, partners, game, cards)
    opp_after, partner_after, best_card, best_seat, trick_pts, led, trump_in_trick, pcard = _trick_so_far(
        t_seat, t_card, p, partner, n, cards, beats)
    low = _by_points(cand, ONE, NONE, cards)
    if partner >= 0 and best_seat == partner:  # the partner is winning the trick
        if opp_after == 0 or not _beaten_by_out(pcard, out, cards) and (
                cards[C_SUIT, pcard] == TRUMP or _in_suit(out, cards[C_SUIT, pcard], cards) >= opp_after):
            return _smear(cand, out, cards)
        return low if cards[C_PTS, low] == 0 or not has_excuse else ex
    win = np.int64(0)  # my winning cards (the trick with my card added is mine)
    x = cand
    while x != 0:
        c, x = _pop(x)
        if beats[best_card * n + c] or best_seat == 0:
            win |= ONE << c
    if win != 0:
        best = _winner_to_play(win, opp_after, partner_after, trick_pts, led, trump_in_trick, out, cards)
        if best >= 0:
            return best
    if cards[C_PTS, low] > 0 and has_excuse:
        return ex  # the excuse saves a counting card
    return low


@njit(cache=True, nogil=True, _nrt=False)
def _trick_so_far(t_seat, t_card, p, partner, n, cards, beats):
    """The trick before my card: the opponents still to play after me, whether the partner plays after
    me, the winner so far (card, seat; B.4.4), its points, the suit led, whether it holds a trump, and the
    partner's card in it (-1)."""
    t_len = t_card.shape[0]
    opp_after, partner_after = 0, False
    for i in range(t_len + 1, p):
        if (t_seat[0] + i) % p == partner:
            partner_after = True
        else:
            opp_after += 1
    best_card, best_seat = n, -1
    trick_pts, led, trump_in_trick, pcard = 0, -1, False, -1
    for i in range(t_len):
        c = t_card[i]
        if beats[best_card * n + c]:
            best_card, best_seat = c, t_seat[i]
        trick_pts += cards[C_PTS, c]
        if led < 0 and cards[C_SUIT, c] != EXCUSE:
            led = cards[C_SUIT, c]
        trump_in_trick |= cards[C_SUIT, c] == TRUMP
        if pcard < 0 and t_seat[i] == partner:
            pcard = c
    return opp_after, partner_after, best_card, best_seat, trick_pts, led, trump_in_trick, pcard


@njit(cache=True, nogil=True, _nrt=False)
def _by_points(x, sign, led, cards):
    """The card of the set ``x`` (-1: none) with the least ``sign`` * points (``ONE``: my lowest card, fewest
    points; ``-ONE``: the most), then a plain card before a trump (any trump alike when ``led`` is trumps; ``NONE``:
    nothing led), then the weakest."""
    best, best_key = -1, 0
    while x != 0:
        c, x = _pop(x)
        key = _key(sign * cards[C_PTS, c], np.int64(cards[C_SUIT, c] == TRUMP and led != TRUMP), cards[C_STRENGTH, c])
        if best < 0 or key < best_key:
            best, best_key = c, key
    return best


@njit(cache=True, nogil=True, _nrt=False)
def _smear(cand, out, cards):
    """The partner wins the trick: give it points, but keep a master trump (it wins its own trick)."""
    keep = _masters(cand & cards[C_SETS, TRUMP], out, cards)
    return _by_points(cand & ~keep if cand & ~keep != 0 else cand, -ONE, NONE, cards)  # (all when nothing else)


@njit(cache=True, nogil=True, _nrt=False)
def _winner_to_play(win, opp_after, partner_after, trick_pts, led, trump_in_trick, out, cards):
    """Which of my winning cards (``win``) to play, or -1 to play low: last to play, the winner with the
    most points; else a sure winner (no card out can take it); else, with no partner after me and points in
    the trick, my highest winner, trumps first."""
    if opp_after == 0:
        return _by_points(win, -ONE, led, cards)
    best, best_key = -1, 0
    x = win
    while x != 0:
        c, x = _pop(x)
        if _safe(c, trump_in_trick, opp_after, out, cards):
            key = _key(-cards[C_PTS, c], cards[C_STRENGTH, c])
            if best < 0 or key < best_key:
                best, best_key = c, key
    if best >= 0 or partner_after or trick_pts < 2:
        return best
    trumps = win & cards[C_SETS, TRUMP]
    return _strongest(trumps if trumps != 0 else win, cards)


@njit(cache=True, nogil=True, _nrt=False)
def _safe(c, trump_in_trick, opp_after, out, cards):
    """Nobody after me can take the trick from ``c``: a trump no card out beats, or a plain card no card
    out beats, with no trump in the trick and enough cards of its suit out for each opponent after me
    (else one may be void and trump it)."""
    if opp_after == 0:
        return True
    if cards[C_SUIT, c] != TRUMP:
        if trump_in_trick:
            return False
        if _in_suit(out, cards[C_SUIT, c], cards) < opp_after:  # an opponent may be void and trump it
            return False
    return not _beaten_by_out(c, out, cards)


@njit(cache=True, nogil=True, _nrt=False)
def _lead(hand, cand, out, partners, game, cards):
    p, partner, n = game[G_PLAYERS], game[G_PARTNER], game[G_N]
    n_out_trumps = _in_suit(out, TRUMP, cards)
    best = -1
    if partner >= 0 and game[O_SIGNALS] >= 0:  # 1. answer the partner's signals
        best = _answer_signals(partners, cand, n, out, cards, n_out_trumps)
    if best < 0:  # 2. cash a master with points while the opponents can still follow
        best = _cash_master(cand, n, out, cards, 2 if p == 4 else 1)
    if best < 0:  # 3. draw trumps with the master trump when I hold as many trumps as are out
        best = _draw_trumps(cand, n, out, cards, n_out_trumps)
    if best < 0:  # 4. lead low
        best = _lead_low(hand, cand, n, out, cards)
    return best


@njit(cache=True, nogil=True, _nrt=False)
def _signalled(signals, sig, s):
    """Whether ``signals`` (bit ``6 * signal + suit``) holds signal ``sig`` for suit ``s``."""
    return _has(signals, 6 * sig + s)


@njit(cache=True, nogil=True, _nrt=False)
def _answer_signals(partners, cand, n, out, cards, n_out_trumps):
    """The partner's signals answered: LEAD_TRUMPS (my master trump, else my lowest trump), WIN_AND_RETURN
    (that suit back, my highest), VOID (that suit, my lowest, for the partner to trump); -1: none applies."""
    if (partners >> (6 * LEAD_TRUMPS)) & 63 != 0:
        best = _trump_to_lead(cand, n, out, cards)
        if best >= 0:
            return best
    for s in range(4):
        if _signalled(partners, WIN_AND_RETURN, s):
            best = _strongest(cand & cards[C_SETS, s], cards)
            if best >= 0:
                return best
    for s in range(4):
        if _signalled(partners, VOID, s) and n_out_trumps > 0:
            best = _by_points(cand & cards[C_SETS, s], ONE, NONE, cards)
            if best >= 0:
                return best
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _trump_to_lead(cand, n, out, cards):
    """My highest master trump, else my lowest trump, else -1."""
    trumps = cand & cards[C_SETS, TRUMP]
    master = _strongest(_masters(trumps, out, cards), cards)
    return master if master >= 0 else _by_points(trumps, ONE, NONE, cards)


@njit(cache=True, nogil=True, _nrt=False)
def _cash_master(cand, n, out, cards, n_opp):
    """My plain master with the most points whose suit every opponent can still follow, or -1."""
    best, best_key = -1, 0
    x = cand
    while x != 0:
        c, x = _pop(x)
        if (cards[C_SUIT, c] != TRUMP and not _beaten_by_out(c, out, cards)
                and _in_suit(out, cards[C_SUIT, c], cards) >= n_opp):
            key = _key(cards[C_PTS, c], cards[C_STRENGTH, c])
            if best < 0 or key > best_key:
                best, best_key = c, key
    return best


@njit(cache=True, nogil=True, _nrt=False)
def _draw_trumps(cand, n, out, cards, n_out_trumps):
    """My top trump when it is the master and I hold as many trumps as are out, or -1."""
    trumps = cand & cards[C_SETS, TRUMP]
    top = _strongest(trumps, cards)
    if top >= 0 and not _beaten_by_out(top, out, cards) and _count(trumps) >= n_out_trumps > 0:
        return top
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _lead_low(hand, cand, n, out, cards):
    """A card without points from my longest plain suit, else my lowest non-master trump without points,
    else my lowest card."""
    best, best_key = -1, 0
    x = cand
    while x != 0:
        c, x = _pop(x)
        if cards[C_SUIT, c] != TRUMP and cards[C_PTS, c] == 0:
            key = _key(-_in_suit(hand, cards[C_SUIT, c], cards), cards[C_STRENGTH, c])
            if best < 0 or key < best_key:
                best, best_key = c, key
    if best >= 0:
        return best
    trumps = cand & cards[C_SETS, TRUMP] & ~cards[C_SETS, SET_PTS]
    best = _by_points(trumps & ~_masters(trumps, out, cards), ONE, NONE, cards)  # (all without points: the weakest)
    return best if best >= 0 else _by_points(cand, ONE, NONE, cards)


@njit(cache=True, nogil=True, _nrt=False)
def _signal(hand, card, out, mine, game, cards):
    """Ottocento / Partita signals: VOID with my last card of a suit while I hold trumps (and a partner
    to tell), LEAD_TRUMPS once with a long, strong trump holding. ``NO_SIGNAL``: none."""
    if game[G_PARTNER] < 0 or card == game[G_EXCUSE]:
        return NO_SIGNAL
    s = cards[C_SUIT, card]
    left = hand & ~(ONE << card)  # my hand after this card
    left_in_suit = left & cards[C_SETS, s] != 0
    left_trumps = left & cards[C_SETS, TRUMP] != 0
    if (s < TRUMP and not left_in_suit and left_trumps and not _signalled(mine, VOID, s)
            and _in_suit(out, s, cards) > 0):
        return VOID
    if (mine >> (6 * LEAD_TRUMPS)) & 63 == 0:
        trumps = hand & cards[C_SETS, TRUMP]
        if _count(trumps) >= 6 and _masters(trumps, out, cards) != 0:
            return LEAD_TRUMPS
    return NO_SIGNAL
