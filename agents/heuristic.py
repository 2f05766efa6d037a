"""The heuristic's decisions as compiled kernels over a batch: ``decide_batch(obs, mask, game, cards, beats)``.

``agents.baselines.HeuristicPolicy`` is the player (its docstring lists the tactics); this module is its
decision code, one generic ``@njit`` kernel for the three games parametrised by per-game constant tables
built once by :func:`game_tables`:

* ``game`` int64[G_SIZE]: the game's constants (kind, seats, pack size, extra action ids, phase ids) and
  the offsets of the observation sections the heuristic reads (``tarot_env.rules.<game>.OBS``; ``-1``:
  the game has no such section);
* ``cards`` int64[C_SIZE, N]: per card its suit, trick strength, equal-group flag, points beyond a plain
  card and ace flag (``tarot_env.cards``), and per suit the strength of its top card (the King);
* ``beats`` bool[(N + 1) * N]: the trick order, ``tarot_env.kernels.play_tables(pack).beats``.

It reads only the observation and the mask, as a player at the table (RULES.md Part H). The comments
follow the player's rules in order; "first" / "most" / "least" ties go to the lowest card id, as Python's
``min`` / ``max`` over the cards in id order do.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from tarot_env.cards import BOLOGNESE, EXCUSE, FRENCH54, TRUMP
from tarot_env.engine import NUM_SIGNALS, Signal
from tarot_env.kernels import play_tables

PARTITA, OTTOCENTO, MILLONE = 0, 1, 2
VOID, LEAD_TRUMPS, WIN_AND_RETURN = int(Signal.VOID), int(Signal.LEAD_TRUMPS), int(Signal.WIN_AND_RETURN)
NO_SIGNAL = -1

# game[...]: constants of the game
(G_KIND, G_PLAYERS, G_N, G_EXCUSE, G_PARTNER, G_NUM_ACTIONS, G_A_MONTE, G_PLAY_ON, G_DECLARE_DONE,
 G_PH_A_MONTE, G_PH_DECLARE, G_PH_DISCARD, G_PH_SECOND_DISCARD,
 # offsets of the observation sections (-1: absent)
 O_HAND, O_MY_DISCARDS, O_PLAYED, O_TRICK, O_WON, O_LEADER, O_PHASE, O_PHASE_LEN, O_SIGNALS, O_PENDING,
 O_PENDING_LEN, O_PUBLIC_DISCARDS, O_EXCHANGED, O_MATTO_PAID, G_SIZE) = range(28)
# cards[row, card]: the pack's tables
C_SUIT, C_STRENGTH, C_EQUAL, C_PTS, C_ACE, C_TOP, C_SIZE = range(7)


def game_tables(game: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(game, cards, beats)`` for :func:`decide_batch`; raises ValueError for a game without a heuristic."""
    g = np.full(G_SIZE, -1, np.int64)
    if game == "partita":
        from tarot_env.rules import partita as m
        pack, base = FRENCH54, 0
        g[G_KIND], g[G_PLAYERS] = PARTITA, 4
        g[G_PH_DISCARD] = 0
    elif game == "ottocento":
        from tarot_env.rules import ottocento as m
        pack, base = BOLOGNESE, 1
        g[G_KIND], g[G_PLAYERS] = OTTOCENTO, 4
        g[G_PH_A_MONTE], g[G_PH_DISCARD], g[G_PH_DECLARE] = 0, 1, 2
        g[G_A_MONTE], g[G_PLAY_ON], g[G_DECLARE_DONE] = m.A_MONTE, m.PLAY_ON, m.DECLARE_DONE
    elif game == "millone":
        from tarot_env.rules import millone as m
        pack, base = BOLOGNESE, 1
        g[G_KIND], g[G_PLAYERS] = MILLONE, 2
        g[G_PH_DISCARD], g[G_PH_SECOND_DISCARD] = 0, 1
    else:
        raise ValueError(f"no heuristic for game {game!r}; games are partita, ottocento, millone")
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
    beats = np.ascontiguousarray(play_tables(pack).beats, dtype=np.bool_)
    return g, c, beats


@njit(cache=True)
def decide_batch(obs, mask, game, cards, beats):
    """The heuristic's action for every row: obs float32[B, O], mask bool[B, A] -> int64[B]."""
    out = np.empty(obs.shape[0], np.int64)
    for b in range(obs.shape[0]):
        out[b] = _decide(obs[b], mask[b], game, cards, beats)
    return out


# --- one decision ----------------------------------------------------------------------------------

@njit(cache=True)
def _decide(obs, mask, game, cards, beats):
    n_legal, first = 0, -1
    for a in range(mask.shape[0]):
        if mask[a]:
            n_legal += 1
            if first < 0:
                first = a
    if n_legal == 1:
        return first
    phase = _argmax(obs, game[O_PHASE], game[O_PHASE_LEN])
    if game[G_KIND] == OTTOCENTO:
        if phase == game[G_PH_A_MONTE]:
            return _a_monte(obs, mask, game, cards)
        if phase == game[G_PH_DECLARE]:
            return _declare(mask, game)
    if phase == game[G_PH_DISCARD] or phase == game[G_PH_SECOND_DISCARD]:
        return _discard(obs, mask, game, cards)
    return _play(obs, mask, game, cards, beats)


@njit(cache=True, inline="always")
def _argmax(obs, start, length):
    """The first largest entry of a section (a one-hot's index)."""
    best = 0
    for i in range(1, length):
        if obs[start + i] > obs[start + best]:
            best = i
    return best


@njit(cache=True, inline="always")
def _bits(obs, start, length):
    """A section read as booleans (entries > 0.5)."""
    return obs[start:start + length] > 0.5


@njit(cache=True)
def _any_row(obs, start, rows, n):
    """A section of ``rows`` x ``n`` booleans: the cards set in any row."""
    seen = np.zeros(n, np.bool_)
    for r in range(rows):
        for c in range(n):
            if obs[start + r * n + c] > 0.5:
                seen[c] = True
    return seen


@njit(cache=True)
def _suit_len(hand, cards):
    """Cards of each suit (0..3, TRUMP, EXCUSE) in ``hand``."""
    n = np.zeros(6, np.int64)
    for c in range(hand.shape[0]):
        if hand[c]:
            n[cards[C_SUIT, c]] += 1
    return n


# --- Ottocento: a monte and declarations -----------------------------------------------------------

@njit(cache=True)
def _a_monte(obs, mask, game, cards):
    hand = _bits(obs, game[O_HAND], game[G_N])
    worthless = True  # no trump, no card with points (courts, the Matto, the top trumps)
    for c in range(game[G_N]):
        if hand[c] and (cards[C_SUIT, c] == TRUMP or cards[C_PTS, c] > 0):
            worthless = False
    want = game[G_A_MONTE] if worthless else game[G_PLAY_ON]
    if mask[want]:
        return want
    return _first(mask, mask.shape[0])


@njit(cache=True)
def _declare(mask, game):
    c = _first(mask, game[G_N])  # reveal every card of M(hand): the largest scoring declaration
    return c if c >= 0 else game[G_DECLARE_DONE]


@njit(cache=True, inline="always")
def _first(mask, stop):
    for a in range(stop):
        if mask[a]:
            return a
    return -1


# --- discards --------------------------------------------------------------------------------------

@njit(cache=True)
def _discard(obs, mask, game, cards):
    n = game[G_N]
    hand = _bits(obs, game[O_HAND], n)
    suit_len = _suit_len(hand, cards)
    kings_held = np.zeros(6, np.bool_)  # plain suits whose King I hold
    for c in range(n):
        s = cards[C_SUIT, c]
        if hand[c] and s < TRUMP and cards[C_STRENGTH, c] == cards[C_TOP, s]:
            kings_held[s] = True
    kind = game[G_KIND]
    best = -1
    best_key = (0, 0, 0, 0, 0)
    for c in range(n):
        if not mask[c]:
            continue
        s = cards[C_SUIT, c]
        trump = np.int64(s == TRUMP)
        pts, strength = cards[C_PTS, c], cards[C_STRENGTH, c]
        if kind == PARTITA:
            # lowest plain card from the shortest suit; counting cards only when forced
            key = (trump, pts, suit_len[s] if not trump else 0, strength, 0)
        elif kind == OTTOCENTO:
            # bank an unprotected court (no King of its suit in hand), else a low card of a short suit
            unprotected = (not trump) and pts > 0 and not kings_held[s]
            key = (trump, np.int64(not unprotected), -pts, suit_len[s], strength)
        else:
            # millone: bank courts and aces (value and combinations are safe in the pile), empty short
            # suits, keep trumps (they win tricks)
            ace = (not trump) and cards[C_ACE, c] != 0
            key = (trump, -(pts + 2 * np.int64(ace)), suit_len[s], strength, 0)
        if best < 0 or key < best_key:
            best, best_key = c, key
    return best if best >= 0 else _first(mask, mask.shape[0])


# --- card play -------------------------------------------------------------------------------------

@njit(cache=True)
def _play(obs, mask, game, cards, beats):
    n, p = game[G_N], game[G_PLAYERS]
    hand = _bits(obs, game[O_HAND], n)
    trick_sec = _bits(obs, game[O_TRICK], p * n).reshape(p, n)
    leader = _argmax(obs, game[O_LEADER], p)
    t_seat = np.empty(p, np.int64)  # the trick: (relative seat, card) in play order
    t_card = np.empty(p, np.int64)
    t_len = 0
    for i in range(p):
        r = (leader + i) % p
        c = _first(trick_sec[r], n)
        if c < 0:
            break
        t_seat[t_len], t_card[t_len] = r, c
        t_len += 1
    # cards seen: my hand, played, the won piles, my discards (and announced discards, exchanged cards,
    # the Matto's payment where the game shows them)
    seen = hand | _any_row(obs, game[O_PLAYED], p, n) | _any_row(obs, game[O_WON], 2, n)
    seen |= _bits(obs, game[O_MY_DISCARDS], n)
    for slot in (O_PUBLIC_DISCARDS, O_EXCHANGED, O_MATTO_PAID):
        if game[slot] >= 0:
            seen |= _bits(obs, game[slot], n)
    out = ~seen  # cards still out (in other hands, hidden discards, the stock)
    out[game[G_EXCUSE]] = False
    signals_legal = False
    for a in range(n, min(n + NUM_SIGNALS, game[G_NUM_ACTIONS])):
        signals_legal |= mask[a]
    pending = False
    if game[O_PENDING] >= 0:
        for i in range(game[O_PENDING_LEN]):
            pending |= obs[game[O_PENDING] + i] != 0

    card = _choose_card(obs, hand, mask[:n], t_seat[:t_len], t_card[:t_len], out, game, cards, beats)
    if signals_legal and not pending:
        sig = _signal(obs, hand, card, out, game, cards)
        if sig != NO_SIGNAL and mask[n + sig]:
            return n + sig
    return card


@njit(cache=True)
def _beaten_by_out(c, out, cards):
    """Could a card still out beat ``c`` if played after it (same suit higher, or any trump stronger; an
    equal-group trump played later also wins)?"""
    s, st = cards[C_SUIT, c], cards[C_STRENGTH, c]
    for x in range(out.shape[0]):
        if not out[x] or cards[C_SUIT, x] != s:
            continue
        if cards[C_STRENGTH, x] > st or (s == TRUMP and cards[C_EQUAL, x] != 0 and cards[C_STRENGTH, x] == st):
            return True
    return False


@njit(cache=True, inline="always")
def _is_master(c, out, cards):
    return not _beaten_by_out(c, out, cards)


@njit(cache=True, inline="always")
def _out_of_suit(s, out, cards):
    """Cards of suit ``s`` still out."""
    k = 0
    for x in range(out.shape[0]):
        if out[x] and cards[C_SUIT, x] == s:
            k += 1
    return k


@njit(cache=True, inline="always")
def _low_key(c, cards):
    return (cards[C_PTS, c], np.int64(cards[C_SUIT, c] == TRUMP), cards[C_STRENGTH, c])


@njit(cache=True)
def _choose_card(obs, hand, legal, t_seat, t_card, out, game, cards, beats):
    n, p, ex, partner = game[G_N], game[G_PLAYERS], game[G_EXCUSE], game[G_PARTNER]
    has_excuse = legal[ex]
    cand = np.empty(n, np.int64)  # my legal cards but the excuse, in id order
    k = 0
    for c in range(n):
        if legal[c] and c != ex:
            cand[k] = c
            k += 1
    if k == 0:
        return ex
    cand = cand[:k]
    if t_card.shape[0] == 0:
        return _lead(obs, hand, cand, out, game, cards)
    opp_after, partner_after, best_card, best_seat, trick_pts, led, trump_in_trick, pcard = _trick_so_far(
        t_seat, t_card, p, partner, n, cards, beats)
    low = _lowest(cand, cards)
    if partner >= 0 and best_seat == partner:  # the partner is winning the trick
        if opp_after == 0 or not _beaten_by_out(pcard, out, cards) and (
                cards[C_SUIT, pcard] == TRUMP or _out_of_suit(cards[C_SUIT, pcard], out, cards) >= opp_after):
            return _smear(cand, out, cards)
        return low if cards[C_PTS, low] == 0 or not has_excuse else ex
    win = np.zeros(k, np.bool_)  # my winning cards (the trick with my card added is mine)
    for i in range(k):
        win[i] = beats[best_card * n + cand[i]] or best_seat == 0
    if win.any():
        best = _winner_to_play(cand, win, opp_after, partner_after, trick_pts, led, trump_in_trick, out, cards)
        if best >= 0:
            return best
    if cards[C_PTS, low] > 0 and has_excuse:
        return ex  # the excuse saves a counting card
    return low


@njit(cache=True)
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


@njit(cache=True)
def _lowest(cand, cards):
    """My lowest card: fewest points, a plain card before a trump, the weakest."""
    low, low_key = -1, (0, 0, 0)
    for c in cand:
        key = _low_key(c, cards)
        if low < 0 or key < low_key:
            low, low_key = c, key
    return low


@njit(cache=True)
def _smear(cand, out, cards):
    """The partner wins the trick: give it points, but keep a master trump (it wins its own trick)."""
    any_smear = False
    for c in cand:
        any_smear |= not (cards[C_SUIT, c] == TRUMP and _is_master(c, out, cards))
    best, best_key = -1, (0, 0, 0)
    for c in cand:
        if any_smear and cards[C_SUIT, c] == TRUMP and _is_master(c, out, cards):
            continue
        key = (-cards[C_PTS, c], np.int64(cards[C_SUIT, c] == TRUMP), cards[C_STRENGTH, c])
        if best < 0 or key < best_key:
            best, best_key = c, key
    return best


@njit(cache=True)
def _winner_to_play(cand, win, opp_after, partner_after, trick_pts, led, trump_in_trick, out, cards):
    """Which of my winning cards (``win``) to play, or -1 to play low: last to play, the winner with the
    most points; else a sure winner (no card out can take it); else, with no partner after me and points in
    the trick, my highest winner, trumps first."""
    k = cand.shape[0]
    if opp_after == 0:
        best, best_key = -1, (0, 0, 0)
        for i in range(k):
            c = cand[i]
            if win[i]:
                key = (-cards[C_PTS, c], np.int64(cards[C_SUIT, c] == TRUMP and led != TRUMP), cards[C_STRENGTH, c])
                if best < 0 or key < best_key:
                    best, best_key = c, key
        return best
    best, best_key = -1, (0, 0)
    for i in range(k):
        c = cand[i]
        if win[i] and _safe(c, trump_in_trick, opp_after, out, cards):
            key = (-cards[C_PTS, c], cards[C_STRENGTH, c])
            if best < 0 or key < best_key:
                best, best_key = c, key
    if best >= 0 or partner_after or trick_pts < 2:
        return best
    best, best_key = -1, (0, 0)
    for i in range(k):
        c = cand[i]
        if win[i]:
            key = (np.int64(cards[C_SUIT, c] == TRUMP), cards[C_STRENGTH, c])
            if best < 0 or key > best_key:
                best, best_key = c, key
    return best


@njit(cache=True)
def _safe(c, trump_in_trick, opp_after, out, cards):
    """Nobody after me can take the trick from ``c``: a trump no card out beats, or a plain card no card
    out beats, with no trump in the trick and enough cards of its suit out for each opponent after me
    (else one may be void and trump it)."""
    if opp_after == 0:
        return True
    if cards[C_SUIT, c] != TRUMP:
        if trump_in_trick:
            return False
        if _out_of_suit(cards[C_SUIT, c], out, cards) < opp_after:  # an opponent may be void and trump it
            return False
    return not _beaten_by_out(c, out, cards)


@njit(cache=True)
def _lead(obs, hand, cand, out, game, cards):
    p, partner = game[G_PLAYERS], game[G_PARTNER]
    n_out_trumps = _out_of_suit(TRUMP, out, cards)
    best = -1
    if partner >= 0 and game[O_SIGNALS] >= 0:  # 1. answer the partner's signals
        best = _answer_signals(obs, cand, out, game, cards, n_out_trumps)
    if best < 0:  # 2. cash a master with points while the opponents can still follow
        best = _cash_master(cand, out, cards, 2 if p == 4 else 1)
    if best < 0:  # 3. draw trumps with the master trump when I hold as many trumps as are out
        best = _draw_trumps(cand, out, cards, n_out_trumps)
    if best < 0:  # 4. lead low
        best = _lead_low(hand, cand, out, cards)
    return best


@njit(cache=True)
def _answer_signals(obs, cand, out, game, cards, n_out_trumps):
    """The partner's signals answered: LEAD_TRUMPS (my master trump, else my lowest trump), WIN_AND_RETURN
    (that suit back, my highest), VOID (that suit, my lowest, for the partner to trump); -1: none applies."""
    p, partner = game[G_PLAYERS], game[G_PARTNER]
    sig = _bits(obs, game[O_SIGNALS], p * NUM_SIGNALS * 6).reshape(p, NUM_SIGNALS, 6)[partner]
    if sig[LEAD_TRUMPS].any():
        best = _trump_to_lead(cand, out, cards)
        if best >= 0:
            return best
    for s in range(4):
        if sig[WIN_AND_RETURN, s]:
            best, best_st = -1, 0
            for c in cand:
                if cards[C_SUIT, c] == s and (best < 0 or cards[C_STRENGTH, c] > best_st):
                    best, best_st = c, cards[C_STRENGTH, c]
            if best >= 0:
                return best
    for s in range(4):
        if sig[VOID, s] and n_out_trumps > 0:
            best = _lowest_of_suit(cand, s, cards)
            if best >= 0:
                return best
    return -1


@njit(cache=True)
def _trump_to_lead(cand, out, cards):
    """My highest master trump, else my lowest trump, else -1."""
    master, master_st, low, low_key = -1, 0, -1, (0, 0, 0)
    for c in cand:
        if cards[C_SUIT, c] != TRUMP:
            continue
        if _is_master(c, out, cards) and (master < 0 or cards[C_STRENGTH, c] > master_st):
            master, master_st = c, cards[C_STRENGTH, c]
        key = _low_key(c, cards)
        if low < 0 or key < low_key:
            low, low_key = c, key
    return master if master >= 0 else low


@njit(cache=True)
def _lowest_of_suit(cand, s, cards):
    """My lowest card of suit ``s``, or -1."""
    best, best_key = -1, (0, 0, 0)
    for c in cand:
        if cards[C_SUIT, c] == s:
            key = _low_key(c, cards)
            if best < 0 or key < best_key:
                best, best_key = c, key
    return best


@njit(cache=True)
def _cash_master(cand, out, cards, n_opp):
    """My plain master with the most points whose suit every opponent can still follow, or -1."""
    best, best_key = -1, (0, 0)
    for c in cand:
        if (cards[C_SUIT, c] != TRUMP and _is_master(c, out, cards)
                and _out_of_suit(cards[C_SUIT, c], out, cards) >= n_opp):
            key = (cards[C_PTS, c], cards[C_STRENGTH, c])
            if best < 0 or key > best_key:
                best, best_key = c, key
    return best


@njit(cache=True)
def _draw_trumps(cand, out, cards, n_out_trumps):
    """My top trump when it is the master and I hold as many trumps as are out, or -1."""
    top, my_trumps = -1, 0
    for c in cand:
        if cards[C_SUIT, c] == TRUMP:
            my_trumps += 1
            if top < 0 or cards[C_STRENGTH, c] > cards[C_STRENGTH, top]:
                top = c
    if top >= 0 and _is_master(top, out, cards) and my_trumps >= n_out_trumps > 0:
        return top
    return -1


@njit(cache=True)
def _lead_low(hand, cand, out, cards):
    """A card without points from my longest plain suit, else my lowest non-master trump without points,
    else my lowest card."""
    suit_len = _suit_len(hand, cards)
    best, best_key = -1, (0, 0)
    for c in cand:
        if cards[C_SUIT, c] != TRUMP and cards[C_PTS, c] == 0:
            key = (-suit_len[cards[C_SUIT, c]], cards[C_STRENGTH, c])
            if best < 0 or key < best_key:
                best, best_key = c, key
    if best >= 0:
        return best
    for c in cand:
        if (cards[C_SUIT, c] == TRUMP and cards[C_PTS, c] == 0 and not _is_master(c, out, cards)
                and (best < 0 or cards[C_STRENGTH, c] < cards[C_STRENGTH, best])):
            best = c
    if best >= 0:
        return best
    return _lowest(cand, cards)


@njit(cache=True)
def _signal(obs, hand, card, out, game, cards):
    """Ottocento / Partita signals: VOID with my last card of a suit while I hold trumps (and a partner
    to tell), LEAD_TRUMPS once with a long, strong trump holding. ``NO_SIGNAL``: none."""
    n, p = game[G_N], game[G_PLAYERS]
    if game[G_PARTNER] < 0 or card == game[G_EXCUSE]:
        return NO_SIGNAL
    mine = _bits(obs, game[O_SIGNALS], p * NUM_SIGNALS * 6).reshape(p, NUM_SIGNALS, 6)[0]
    s = cards[C_SUIT, card]
    left_in_suit, left_trumps = False, False  # my hand after this card
    for c in range(n):
        if hand[c] and c != card:
            left_in_suit |= cards[C_SUIT, c] == s
            left_trumps |= cards[C_SUIT, c] == TRUMP
    if (s < TRUMP and not left_in_suit and left_trumps and not mine[VOID, s]
            and _out_of_suit(s, out, cards) > 0):
        return VOID
    if not mine[LEAD_TRUMPS].any():
        trumps, masters = 0, 0
        for c in range(n):
            if hand[c] and cards[C_SUIT, c] == TRUMP:
                trumps += 1
                masters += _is_master(c, out, cards)
        if trumps >= 6 and masters >= 1:
            return LEAD_TRUMPS
    return NO_SIGNAL
