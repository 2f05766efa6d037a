"""Baseline players for the three games, behind the one ``Policy`` interface of ``agents/policy.py``.

* ``RandomPolicy`` (re-exported from ``agents.policy``): uniform among the legal actions.
* ``HeuristicPolicy(game)``: a rule-based club player. It reads **only the observation vector and the
  legal-action mask** — nothing from the rules object — decoding the observation through the game's
  ``OBS`` layout (``tarot_env.rules.<game>.OBS``) and the pack tables (suit, strength, equal group,
  counting value). So it sees exactly what a player at the table sees (RULES.md Part H) and can be
  used anywhere a policy is: in the AEC env, in the single-agent wrapper, in the arena, as a human's
  opponent.

What the heuristic does (standard tactics of RULES.md Parts C, D, E):

* **card play** — a *master* card is the highest card of its suit still unseen by me (played cards,
  my hand, my discards, announced discards and the won piles are known). Leading: answer the
  partner's signals first (``LEAD_TRUMPS`` → lead a trump; ``WIN_AND_RETURN`` → lead that suit back;
  ``VOID`` → lead that suit for the partner to trump); else cash a master with points while the
  opponents can still follow; else draw trumps with the master trump when I hold at least as many
  trumps as are still out; else lead low (a card without points) from my longest suit. Following:
  when the partner's card is safely winning, give it points ("smear": Kings, Queens, trump I …);
  when last to play, win with the winning card that carries the most points; otherwise win only
  with a card that cannot be beaten afterwards, else play low (no points, no trump if avoidable).
  The excuse (Fool / Matto) is played instead of a card that would give points away.
* **Partita** discard (PAR-4): the two lowest plain cards, from the shortest suits (voids let trumps
  win), never a counting card unless forced.
* **Ottocento**: *a monte* only with a worthless first packet (no trump, no court); discard (OTT-4) a
  court card without its King (it is banked in the team's pile) or a low card of a short suit;
  **declares** every card that can score (OTT-5: reveal ``M(hand)`` card by card, then done);
  the eldest signals (OTT-8) ``VOID`` when playing his last card of a suit while holding trumps and
  ``LEAD_TRUMPS`` once with a long, strong trump holding.
* **Millone** discards (MIL-2.4, 2.6): discards count for their owner, so it banks the court cards
  and aces (their points and combinations are safe in the pile) and empties short suits; it keeps
  the trumps that win tricks.
"""
from __future__ import annotations

import numpy as np

from tarot_env.cards import BOLOGNESE, EXCUSE, FRENCH54, TRUMP
from tarot_env.engine import NUM_SIGNALS, Signal, trick_winner

from .policy import Policy, RandomPolicy

__all__ = ["Policy", "RandomPolicy", "HeuristicPolicy", "BASELINES", "make_baseline"]


class _GameInfo:
    """What the heuristic needs to know about one game: its layout, pack, seats and extra actions."""

    def __init__(self, game: str):
        if game == "partita":
            from tarot_env.rules import partita as m
            self.pack, self.players, self.base = FRENCH54, 4, 0
            self.phases = {"DISCARD": 0, "PLAY": 1}
        elif game == "ottocento":
            from tarot_env.rules import ottocento as m
            self.pack, self.players, self.base = BOLOGNESE, 4, 1
            self.phases = {"A_MONTE": 0, "DISCARD": 1, "DECLARE": 2, "PLAY": 3}
            self.A_MONTE, self.PLAY_ON, self.DECLARE_DONE = m.A_MONTE, m.PLAY_ON, m.DECLARE_DONE
        elif game == "millone":
            from tarot_env.rules import millone as m
            self.pack, self.players, self.base = BOLOGNESE, 2, 1
            self.phases = {"DISCARD": 0, "SECOND_DISCARD": 1, "PLAY": 2}
        else:
            raise ValueError(f"no heuristic for game {game!r}; games are partita, ottocento, millone")
        self.game = game
        self.OBS = m.OBS
        self.num_actions = int(m.NUM_ACTIONS)
        self.obs_size = int(m.OBS.size)
        p = self.pack
        self.N = p.size
        self.suit = p.suit.astype(np.int64)
        self.strength = p.strength.astype(np.int64)
        self.equal = p.equal_group.astype(bool)
        self.excuse = p.excuse
        # points a card carries into a pile beyond a plain card: Partita's counting value (PAR-6.1),
        # the Bolognese value minus the scartino's 1 (B.3.1)
        self.pts = np.maximum(p.value.astype(np.int64) - self.base, 0)
        self.trumps = self.suit == TRUMP
        self.partner = 2 if self.players == 4 else None
        self.sections = {name for name, _ in m.OBS.sections}

    def sec(self, obs: np.ndarray, name: str) -> np.ndarray:
        return obs[self.OBS.offsets[name]]


class HeuristicPolicy(Policy):
    """A rule-based player of ``game`` that decodes the observation (see the module docstring).

    Deterministic: the same observation and mask always give the same action.
    """

    def __init__(self, game: str, seed: int | None = None):
        self.info = _GameInfo(game)
        self.game = game

    # --- the Policy interface ------------------------------------------------------------------
    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        mask = np.asarray(mask).astype(bool)
        if obs.ndim != 2 or mask.ndim != 2 or len(obs) != len(mask):
            raise ValueError(f"act_batch wants obs[n, {self.info.obs_size}] and mask[n, "
                             f"{self.info.num_actions}]; got {obs.shape} and {mask.shape}")
        if obs.shape[1] != self.info.obs_size or mask.shape[1] != self.info.num_actions:
            raise ValueError(f"{self.game} heuristic: obs must have {self.info.obs_size} columns and mask "
                             f"{self.info.num_actions}; got {obs.shape[1]} and {mask.shape[1]}")
        if not mask.any(axis=1).all():
            raise ValueError("a mask row has no legal action")
        return np.array([self._decide(o, m) for o, m in zip(obs, mask)], dtype=np.int64)

    # --- one decision --------------------------------------------------------------------------
    def _decide(self, obs: np.ndarray, mask: np.ndarray) -> int:
        legal = np.flatnonzero(mask)
        if len(legal) == 1:
            return int(legal[0])
        g = self.info
        phase = int(np.argmax(g.sec(obs, "phase")))
        ph = g.phases
        if g.game == "ottocento":
            if phase == ph["A_MONTE"]:
                return self._a_monte(obs, mask)
            if phase == ph["DECLARE"]:
                return self._declare(mask)
        if phase in (ph.get("DISCARD"), ph.get("SECOND_DISCARD")):
            return self._discard(obs, mask)
        return self._play(obs, mask)

    # --- Ottocento: a monte and declarations ---------------------------------------------------
    def _a_monte(self, obs, mask) -> int:
        g = self.info
        hand = g.sec(obs, "hand") > 0.5
        worthless = not (hand & g.trumps).any() and not (g.pts[hand] > 0).any()
        want = g.A_MONTE if worthless else g.PLAY_ON
        return int(want) if mask[want] else int(np.flatnonzero(mask)[0])

    def _declare(self, mask) -> int:
        g = self.info
        cards = np.flatnonzero(mask[:g.N])
        if len(cards):  # reveal every card of M(hand): the largest scoring declaration
            return int(cards[0])
        return int(g.DECLARE_DONE)

    # --- discards --------------------------------------------------------------------------------
    def _discard(self, obs, mask) -> int:
        g = self.info
        hand = g.sec(obs, "hand") > 0.5
        cand = np.flatnonzero(mask[:g.N])
        suit_len = np.bincount(g.suit[hand], minlength=6)
        kings_held = {int(g.suit[c]) for c in np.flatnonzero(hand) if g.suit[c] < TRUMP and
                      g.strength[c] == g.strength[g.suit == g.suit[c]].max()}

        def key(c):
            s = int(g.suit[c])
            trump = s == TRUMP
            if g.game == "partita":
                # lowest plain card from the shortest suit; counting cards only when forced
                return (trump, int(g.pts[c]), int(suit_len[s]) if not trump else 0, int(g.strength[c]))
            if g.game == "ottocento":
                # bank an unprotected court (no King of its suit in hand), else a low card of a short suit
                unprotected = (not trump) and g.pts[c] > 0 and s not in kings_held
                return (trump, not unprotected, -int(g.pts[c]), int(suit_len[s]), int(g.strength[c]))
            # millone: bank courts and aces (value and combinations are safe in the pile), empty short
            # suits, keep trumps (they win tricks)
            ace = (not trump) and BOLOGNESE.names[c].startswith("A")
            return (trump, -(int(g.pts[c]) + 2 * ace), int(suit_len[s]), int(g.strength[c]))

        return int(min(cand, key=key))

    # --- card play -------------------------------------------------------------------------------
    def _play(self, obs, mask) -> int:
        g = self.info
        N, P = g.N, g.players
        hand = g.sec(obs, "hand") > 0.5
        trick_sec = (g.sec(obs, "trick") > 0.5).reshape(P, N)
        leader = int(np.argmax(g.sec(obs, "leader")))
        trick = []  # (relative seat, card) in play order
        for i in range(P):
            r = (leader + i) % P
            cards = np.flatnonzero(trick_sec[r])
            if len(cards) == 0:
                break
            trick.append((r, int(cards[0])))
        seen = hand | (g.sec(obs, "played") > 0.5).reshape(P, N).any(0) | (g.sec(obs, "won") > 0.5).reshape(2, N).any(0)
        seen |= g.sec(obs, "my_discards") > 0.5
        for extra in ("public_discards", "exchanged", "matto_paid"):
            if extra in g.sections:
                seen |= g.sec(obs, extra) > 0.5
        out = ~seen  # cards still out (in other hands, hidden discards, the stock)
        out[g.excuse] = False
        legal = mask[:N].copy()
        signals_legal = mask[N:N + NUM_SIGNALS].any() if g.num_actions > N else False
        pending = "pending_signal" in g.sections and g.sec(obs, "pending_signal").any()

        card = self._choose_card(obs, hand, legal, trick, out)
        if signals_legal and not pending:
            sig = self._signal(obs, hand, card, trick, out)
            if sig is not None and mask[N + sig]:
                return N + sig
        return card

    def _beaten_by_out(self, c: int, out: np.ndarray) -> bool:
        """Could a card still out beat ``c`` if played after it (same suit higher, or any trump
        stronger; an equal-group trump played later also wins)?"""
        g = self.info
        s = g.suit[c]
        if s == TRUMP:
            stronger = out & g.trumps & ((g.strength > g.strength[c]) | (g.equal & (g.strength == g.strength[c])))
            return bool(stronger.any())
        return bool((out & (g.suit == s) & (g.strength > g.strength[c])).any())

    def _is_master(self, c: int, out: np.ndarray) -> bool:
        return not self._beaten_by_out(c, out)

    def _low_key(self, c):
        g = self.info
        return (int(g.pts[c]), bool(g.trumps[c]), int(g.strength[c]))

    def _choose_card(self, obs, hand, legal, trick, out) -> int:
        g = self.info
        P = g.players
        ex = g.excuse
        has_excuse = bool(legal[ex])
        cards = [int(c) for c in np.flatnonzero(legal) if c != ex]
        if not cards:
            return ex
        if not trick:
            return self._lead(obs, hand, cards, out)
        me = 0
        after = [(trick[0][0] + i) % P for i in range(len(trick) + 1, P)]  # seats still to play after me
        opp_after = [r for r in after if r != g.partner]
        best_seat = trick_winner(g.pack, trick)
        trick_pts = sum(int(g.pts[c]) for _, c in trick)
        partner_winning = g.partner is not None and best_seat == g.partner
        winners = [c for c in cards if trick_winner(g.pack, trick + [(me, c)]) == me]
        led = next((g.suit[c] for _, c in trick if g.suit[c] != EXCUSE), None)

        def safe(c) -> bool:
            if not opp_after:
                return True
            if g.suit[c] != TRUMP:
                if any(g.suit[x] == TRUMP for _, x in trick):
                    return False
                same_out = int((out & (g.suit == g.suit[c])).sum())
                if same_out < len(opp_after):  # an opponent may be void and trump it
                    return False
            return not self._beaten_by_out(c, out)

        low = min(cards, key=self._low_key)
        if partner_winning:
            pcard = next(c for r, c in trick if r == g.partner)
            if not opp_after or not self._beaten_by_out(pcard, out) and (
                    g.suit[pcard] == TRUMP or int((out & (g.suit == g.suit[pcard])).sum()) >= len(opp_after)):
                # smear: give the partner points, but keep a master trump (it wins its own trick)
                smear = [c for c in cards if not (g.trumps[c] and self._is_master(c, out))] or cards
                return min(smear, key=lambda c: (-int(g.pts[c]), bool(g.trumps[c]), int(g.strength[c])))
            return low if g.pts[low] == 0 or not has_excuse else ex
        if winners:
            if not opp_after:  # last to play: win, with the card that carries the most points
                return min(winners, key=lambda c: (-int(g.pts[c]), bool(g.trumps[c] and led != TRUMP),
                                                   int(g.strength[c])))
            sure = [c for c in winners if safe(c)]
            if sure:
                return min(sure, key=lambda c: (-int(g.pts[c]), int(g.strength[c])))
            partner_after = g.partner is not None and g.partner in after
            if not partner_after and trick_pts >= 2:
                return max(winners, key=lambda c: (bool(g.trumps[c]), int(g.strength[c])))
        if g.pts[low] > 0 and has_excuse:
            return ex  # the excuse saves a counting card
        return low

    def _lead(self, obs, hand, cards, out) -> int:
        g = self.info
        P = g.players
        n_opp = 2 if P == 4 else 1
        # 1. answer the partner's signals
        if g.partner is not None and "signals" in g.sections:
            sig = (g.sec(obs, "signals") > 0.5).reshape(P, NUM_SIGNALS, 6)[g.partner]
            trumps = [c for c in cards if g.trumps[c]]
            if sig[Signal.LEAD_TRUMPS].any() and trumps:
                masters = [c for c in trumps if self._is_master(c, out)]
                if masters:
                    return max(masters, key=lambda c: int(g.strength[c]))
                return min(trumps, key=self._low_key)
            for s in np.flatnonzero(sig[Signal.WIN_AND_RETURN][:4]):
                mine = [c for c in cards if g.suit[c] == s]
                if mine:
                    return max(mine, key=lambda c: int(g.strength[c]))
            for s in np.flatnonzero(sig[Signal.VOID][:4]):
                mine = [c for c in cards if g.suit[c] == s]
                if mine and (out & g.trumps).any():
                    return min(mine, key=self._low_key)
        # 2. cash a master with points while the opponents can still follow
        cash = [c for c in cards if not g.trumps[c] and self._is_master(c, out)
                and int((out & (g.suit == g.suit[c])).sum()) >= n_opp]
        if cash:
            return max(cash, key=lambda c: (int(g.pts[c]), int(g.strength[c])))
        # 3. draw trumps with the master trump when I hold as many trumps as are out
        my_trumps = [c for c in cards if g.trumps[c]]
        if my_trumps:
            top = max(my_trumps, key=lambda c: int(g.strength[c]))
            if self._is_master(top, out) and len(my_trumps) >= int((out & g.trumps).sum()) > 0:
                return top
        # 4. lead low from my longest plain suit
        plain = [c for c in cards if not g.trumps[c] and g.pts[c] == 0]
        if plain:
            suit_len = np.bincount(g.suit[hand], minlength=6)
            return min(plain, key=lambda c: (-int(suit_len[g.suit[c]]), int(g.strength[c])))
        nonmaster_trumps = [c for c in my_trumps if g.pts[c] == 0 and not self._is_master(c, out)]
        if nonmaster_trumps:
            return min(nonmaster_trumps, key=lambda c: int(g.strength[c]))
        return min(cards, key=self._low_key)

    def _signal(self, obs, hand, card, trick, out) -> int | None:
        """Ottocento / Partita signals: VOID with my last card of a suit while I hold trumps (and a
        partner to tell), LEAD_TRUMPS once with a long, strong trump holding."""
        g = self.info
        if g.partner is None or card == g.excuse:
            return None
        mine = (g.sec(obs, "signals") > 0.5).reshape(g.players, NUM_SIGNALS, 6)[0]
        s = int(g.suit[card])
        left = hand.copy()
        left[card] = False
        if (s < TRUMP and not (left & (g.suit == s)).any() and (left & g.trumps).any()
                and not mine[Signal.VOID, s] and (out & (g.suit == s)).any()):
            return int(Signal.VOID)
        trumps = hand & g.trumps
        if not mine[Signal.LEAD_TRUMPS].any() and trumps.sum() >= 6:
            masters = sum(self._is_master(int(c), out) for c in np.flatnonzero(trumps))
            if masters >= 1:
                return int(Signal.LEAD_TRUMPS)
        return None


BASELINES = ("random", "heuristic")


def make_baseline(name: str, game: str, seed: int | None = None) -> Policy:
    """``"random"`` or ``"heuristic"`` for ``game``."""
    if name == "random":
        return RandomPolicy(seed)
    if name == "heuristic":
        return HeuristicPolicy(game)
    raise ValueError(f"unknown baseline {name!r}; baselines are {list(BASELINES)}")
