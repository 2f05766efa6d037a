"""Ottocento — ``tarocchini/ottocento-v2``

The four-player Bolognese game (RULES.md Part C, with Part B): two fixed partnerships play the
62-card Tarocco Bolognese pack. Each hand: the first 5 cards are dealt and the players may throw the
hand in *a monte*; the dealer takes 17 cards and discards 2 face down; each player lays face up the
combinations he wants to declare; 15 tricks are played with optional public signals; each team scores
declarations + combinations in its won cards + card points + 6 for the last trick. The first team to
800 wins. Each clause is cited in ``tests/test_ottocento*.py``.

```python
import numpy as np, pettingzoo, tarot_env
env = pettingzoo.make("aec", "tarocchini/ottocento-v2", render_mode="ansi")
env.reset(seed=0)
for agent in env.agent_iter():
    obs, reward, termination, truncation, info = env.last()
    action = None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[0])
    env.step(action)
```

| | |
|---|---|
| Agents | ``player_0`` … ``player_3``; teams ``{player_0, player_2}`` and ``{player_1, player_3}`` |
| Action space | ``Discrete(68)`` for every phase |
| Observation | ``Dict(observation=Box(1558,), action_mask=Box(68,) int8)`` |
| State | ``Box(1804,)``: full information (all hands, the hidden discards), for centralised critics |
| Import | ``pettingzoo.make("aec", "tarocchini/ottocento-v2")`` or ``tarot_env.envs.ottocento.env()`` |

## Actions

One flat id space. A card id means that card in every phase (discard, declaration, play):

| ids | meaning |
|---|---|
| 0–3 | trumps ``Angel World Sun Moon`` |
| 4–15 | trumps ``T16 T15 … T5`` |
| 16–19 | the four Moors ``Moor1 … Moor4`` (equal rank: the last played wins, B.2.2) |
| 20 | ``Begato`` |
| 21 | ``Matto`` |
| 22–31 | coins ``KD QD CD JD AD 6D 7D 8D 9D 10D`` |
| 32–41 | cups ``KC QC CC JC AC 6C 7C 8C 9C 10C`` |
| 42–51 | swords ``KS QS CS JS 10S 9S 8S 7S 6S AS`` |
| 52–61 | batons ``KB QB CB JB 10B 9B 8B 7B 6B AB`` |
| 62–64 | signals ``VOID``, ``LEAD_TRUMPS``, ``WIN_AND_RETURN`` (OTT-8) |
| 65 | ``a_monte``: throw the hand in (OTT-3) |
| 66 | ``play_on``: no a monte (OTT-3) |
| 67 | ``declare_done``: close my declaration (OTT-5) |

* **A monte** (phase ``A_MONTE``, after the first 5 cards, eldest first): ``a_monte`` or ``play_on``.
  If all four say ``a_monte`` the hand is thrown in (scores 0, a ``"thrown_in": True`` entry in the
  history) and the deal passes. By default the question stops at the first ``play_on``
  (``a_monte="stop_at_no"``). The answers are public.
* **Discard** (phase ``DISCARD``, the dealer, twice): a card of the hand; the Kings, Angel, World,
  Bégato and Matto are never legal (OTT-4.2). Hidden from the three others, the partner included.
* **Declare** (phase ``DECLARE``, eldest first, the dealer last): reveal one card id at a time, then
  ``declare_done``. A card is legal if it belongs to the largest subset of the hand in which every card
  counts in a scoring combination (B.5), so whatever is revealed can always be completed;
  ``declare_done`` is legal when nothing is revealed (declare nothing) or every revealed card counts.
  Every scoring subset is reachable, including a smaller set or run than held (OTT-5.2). Revealed
  cards are public at once and stay in the hand. The declaration scores ``combo_points`` of that
  player's set (OTT-5.3), added to the team's cumulative score at once; a team reaching 800 then wins
  (OTT-6.1).
* **Play** (phase ``PLAY``, eldest leads, 15 tricks): the card (B.4: follow suit, else trump, else
  anything; the Matto any time). An eligible player (``ott_signal_players``; eldest by default) may
  first choose one signal id, then plays the card it goes with (OTT-8); signals are public.
* The Matto (OTT-7.3, 7.4) is settled automatically at the end of the hand: if an opponent won its
  trick, its team gives the opponents one of its won cards of value 1 (else of its lowest value), the
  one whose loss costs its pile the fewest combination points (ties: the lowest trick rank); the card
  is public (``matto_paid``). A team that won no trick gives the Matto itself.

``info["legal_actions"]`` of the acting player names its legal actions (``["KD", "signal:VOID"]``).

## Observation (1558 floats, seat-relative: me, right, partner, left)

| slice | size | content |
|---|---|---|
| hand | 62 | my cards |
| my_discards | 62 | my two discards, when I dealt (hidden from the others, OTT-4.1) |
| declared | 4×62 | cards each seat laid face up (public, OTT-5.2) |
| played | 4×62 | cards each seat has played to tricks this hand |
| trick | 4×62 | the current trick, by seat |
| won | 2×62 | cards taken in tricks by my team / the other team (the Matto sits with its owner) |
| signals | 4×3×6 | signals given: seat × signal × suit of its card (4 suits, trumps, Matto) |
| matto_paid | 62 | the low card paid for the Matto at the end of the hand (public; seen at game over) |
| a_monte | 4×2 | answers per seat: said *a monte*, said *play on* |
| pending_signal | 3 | the signal I chose for my next card |
| seat_from_dealer | 4 | one-hot, 0 = I deal, 1 = I am eldest |
| leader | 4 | one-hot, who led the current trick |
| hand_sizes | 4 | cards held / 17 |
| tricks_won | 2 | my team / other team, / 15 |
| declared_points | 4 | each seat's declared points / 1000 |
| scores | 2 | cumulative game scores, my team / other, / ``target_score`` (unbounded) |
| hands_played | 2 | hands played and hands left, / ``max_hands`` |
| phase | 5 | one-hot: a monte, discard, declare, play, game over |
| shown_void | 4×5 | v1: seat × suit (coins, cups, swords, batons, trumps) the seat has shown it lacks: it did not follow the suit led, and a plain card on it shows no trumps either (B.4.1–B.4.2; the Matto shows nothing) |
| signal_cards | 62×3 | v1: card × signal, the signal each played card carried (OTT-8.2) |
| played_trick | 62 | v1: per card, (t + 1) / 15 if it was played in trick t (0 = the first) this hand, else 0 |
| pile_combos | 2 | v2: the combination points (B.5) of the cards my team / the other team won in tricks, / 100 |
| combo_gain | 2×62 | v2: per card in neither pile, what it would add to my team's / the other team's pile combination points if that team took it, / 100 (0 for a card already won) |

``shown_void``, ``signal_cards`` and ``played_trick`` are the table memory of RULES.md H.1.1, added in
v1; ``pile_combos`` and ``combo_gain``, added in v2, put a number on what each card is worth to each
side's pile: the combinations in the won cards score at the end of the hand (C.9), and a card that
completes a cricca or extends a sequence for one side is worth winning, or keeping from it, far beyond
its card points. They read only the public ``won`` section (the dealer's discards are not in it: they
join the pile at the end of the hand, OTT-4.3) and are computed by ``combos.combo_gains``, once per
change of the piles. Every section is appended, so the earlier ones keep their offsets (an older
network is migrated by zero input columns, ``scripts/migrate_policy.py``). Why the signals are encoded this way: ``tarot_env/engine.py``'s
module docstring.

Exact offsets: ``tarot_env.rules.ottocento.OBS.describe()``. The observation holds only what the
player knows at the table (RULES.md H.1–H.3, H.1.1); the tests re-deal every unseen card (the other hands
less their declared cards, the dealer's discards) and check it does not change.

## Rewards

Shared by partners. Default ``reward="deal"``: at the end of every hand each player receives
``(own team's hand score − other team's) / reward_scale``; ``reward_scale`` defaults to **200** for
Ottocento (the median absolute hand-score difference under random play is about 200). A thrown-in
hand gives 0. A game won at the declarations ends with a reward from the declared points of that hand.
``reward="game"``: only at the end, +1 for the winning team, −1 for the other, 0 for a draw.

## Rendering and the end-of-hand info: the whole table or one seat's view

``render()`` draws **the whole table**: every hand and the dealer's two hidden discards, with card names.
It is for spectators and debugging, not what any player may see. ``env.unwrapped.render_view(agent)``
returns the table as that seat knows it (RULES.md H.1–H.3; ``tarot_env.view``): its own hand, its own
discards when it dealt (the others see "discarded 2 face down"), the *a monte* answers, the declared
cards and their points, the cards each seat played, the current and the last trick, the signals with the
trick and card they went with, the scores and tricks won. When a hand ends, ``infos[agent]["last_result"]``
is that hand's record as the seat knows it (``OttocentoGame.result_view``): ``discards`` holds the two
discards for the dealer only (not for the partner, OTT-4.1) and ``discards_hidden`` counts what is left
out; the paid Matto card and the score parts are public. The full record is
``env.unwrapped.game.history`` (full information, like ``state()``).

## Options

Rules: ``target_score`` (800, OTT-10.1), ``max_hands`` (60: the game ends as a draw, reported as a
*truncation*, after that many hands, thrown-in hands included, OTT-10.3), ``moors_double_count``
(``True``; ``False``: a Moor counts in the Grande or the Moors sequence, not both, in the division that
scores most, B.5.3.7, O-4), ``suit_min_natural`` (2 | 3: natural cards among the first three of a suit
sequence; the Grande always needs 2, O-2), ``ott_signal_players`` (``"eldest_only"`` |
``"all"``, OTT-8.3), ``ott_signal_timing`` (``"any"`` | ``"after_top_card_played"``: a signal only
with a card of a suit whose King — the Angel for trumps — was played earlier in the hand, OTT-8.4),
``a_monte`` (``"stop_at_no"`` | ``"ask_all"`` | ``"off"``, OTT-3), ``first_dealer`` (-1 = random,
OTT-1.2). Environment: ``reward`` (``"deal"`` | ``"game"``), ``reward_scale`` (200), ``episode``
(``"game"`` | ``"deal"``: one hand per episode — a thrown-in hand counts — and ``reset()`` without a
seed continues with the next one; after the game it starts the next game, its first deal to the right
of the last dealer), ``illegal_action`` (``"raise"`` | ``"terminate"``), ``illegal_reward`` (-1),
``render_mode`` (``None`` | ``"ansi"`` | ``"human"``). Unknown options and bad values raise
``ValueError`` by name.

## Version history

* v0: initial release: observation 1164 floats, ``state()`` 1536.
* v1 (issue #13): table memory (RULES.md H.1.1): ``shown_void``, ``signal_cards`` and ``played_trick``
  appended to the observation (1164 → 1432) and to ``state()`` (1536 → 1804, absolute seats); the v0
  sections keep their offsets (``scripts/migrate_policy.py`` turns a v0 policy into a v1 one that
  plays the same); and the rules fixes of issue #13 (Matto exchange, combination flags).
  ``tarocchini/ottocento-v0`` is no longer registered for play: asking for it raises ``ValueError``
  naming the current id.
* v2 (issue #12): the won piles' combination features appended to the observation (1432 → 1558):
  ``pile_combos`` (each team's B.5 points in its won cards) and ``combo_gain`` (what each card in neither
  pile would add to each team's pile). They are functions of the public ``won`` section (RULES.md H.1):
  no new information, but the value of a card to either pile, which the networks did not learn to
  compute (the gap to the search players, issue #12). ``state()`` and the rules are unchanged;
  ``python scripts/migrate_policy.py OLD.pt NEW.pt`` turns a v0 or v1 policy into a v2 one that plays
  the same. ``tarocchini/ottocento-v1`` raises ``ValueError`` naming ``tarocchini/ottocento-v2``.
"""
from __future__ import annotations

from ..rules.ottocento import OttocentoGame
from .base import TarotAECEnv


class raw_env(TarotAECEnv):
    """The Ottocento AEC environment without wrappers (see the module docstring)."""

    Game = OttocentoGame
    metadata = {"render_modes": ["human", "ansi"], "name": "ottocento_v2", "is_parallelizable": False}
    default_reward_scale = 200.0  # median |hand score difference| under random play (module doc)


def env(**kwargs) -> raw_env:
    """The registered environment. ``raw_env`` already checks every action and its order, so no
    PettingZoo wrapper is added (they would only slow the loop down)."""
    return raw_env(**kwargs)
