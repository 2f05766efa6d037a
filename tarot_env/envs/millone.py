"""Millone — ``tarocchini/millone-v2``

The two-player Bolognese tarot game to 1000 (RULES.md Part D, on Part B). Each hand: a first deal
of 20 and 22 cards (four rounds of 5, the dealer taking 7 last), an automatic claim check (a player
whose score plus the combinations in his hand reaches 1000 wins at once), a hidden discard of 10 by
each player, two more rounds of 5 each from the stock, the dealer's second discard of 2, then 20
tricks of 2 under follow-suit / must-trump / the Matto as an excuse. Each player scores his pile
(tricks + discards): card points (87 between the two) + 6 for the last trick + the combinations
(cricche and sequences, B.5) in it. The first to 1000 wins; both: the higher; equal: play on.
Each clause is cited in ``tests/test_millone*.py``.

```python
import numpy as np, pettingzoo, tarot_env
env = pettingzoo.make("aec", "tarocchini/millone-v2", render_mode="ansi")
env.reset(seed=0)
for agent in env.agent_iter():
    obs, reward, termination, truncation, info = env.last()
    action = None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[0])
    env.step(action)
```

| | |
|---|---|
| Agents | ``player_0``, ``player_1`` (each its own side) |
| Action space | ``Discrete(65)`` for every phase |
| Observation | ``Dict(observation=Box(836,), action_mask=Box(65,) int8)`` |
| State | ``Box(898,)``: full information (both hands, both discards, the stock), for centralised critics |
| Import | ``pettingzoo.make("aec", "tarocchini/millone-v2")`` or ``tarot_env.envs.millone.env()`` |

## Actions

One flat id space. A card id means that card in every phase:

| ids | meaning |
|---|---|
| 0–3 | ``Angel World Sun Moon`` |
| 4–15 | trumps ``T16 T15 … T5`` |
| 16–19 | ``Moor1 Moor2 Moor3 Moor4`` (equal rank: the later played wins, B.2.2) |
| 20 | ``Begato`` |
| 21 | ``Matto`` |
| 22–31 | coins ``KD QD CD JD AD 6D 7D 8D 9D 10D`` (round suit: Ace high among pips) |
| 32–41 | cups ``KC QC CC JC AC 6C 7C 8C 9C 10C`` (round suit) |
| 42–51 | swords ``KS QS CS JS 10S 9S 8S 7S 6S AS`` (long suit) |
| 52–61 | batons ``KB QB CB JB 10B 9B 8B 7B 6B AB`` (long suit) |
| 62–64 | the engine's signal ids ``signal:VOID …`` — Millone has no signals: **never legal** |

* **Discard** (phase ``DISCARD``: first the non-dealer 10 times, then the dealer 10 times; phase
  ``SECOND_DISCARD``: the dealer twice): the card to put face down into one's own pile. Honours
  (``Angel World Begato Matto``) and Kings are never legal (MIL-2.4, MIL-2.6). A discard is seen
  only by its owner.
* **Play** (phase ``PLAY``, the non-dealer leads): the card to play (MIL-4.2: follow suit, else
  trump, else anything; the Matto any time).
* The game claim (MIL-3) and the Matto exchange (MIL-4.3) are automatic: no action. The Matto's
  player who loses its trick gives the opponent, at once, one of the empty cards he has **won in
  tricks** (the one whose loss costs his pile the fewest combination points), never one of his hidden
  discards; with none won yet he owes it (public, ``exchange_owed``) and pays at the end of the first
  trick that brings him one, else at the end of the hand with the lowest-valued card of his whole
  pile (M-5). The card paid is public (``exchanged``). If he wins no trick, the opponent gets the
  Matto instead (MIL-4.4).

``info["legal_actions"]`` of the acting player names its legal actions (``["KD", "Matto"]``).

## Observation (836 floats, seat-relative: me, opponent)

| slice | size | content |
|---|---|---|
| hand | 62 | my cards |
| my_discards | 62 | my discards (hidden from the opponent, MIL-2.4) |
| played | 2×62 | cards played to tricks this hand, by me / by the opponent |
| trick | 2×62 | the current trick, by seat |
| won | 2×62 | public part of each pile: cards taken in tricks, the Matto, the card paid for it |
| exchanged | 62 | the card paid for the Matto this hand (public: shown when handed over) |
| claim_shown | 2×62 | scoring cards shown by a game claim (MIL-3), mine / the opponent's |
| seat_from_dealer | 2 | one-hot, 0 = I deal |
| leader | 2 | one-hot, who led the current trick |
| hand_sizes | 2 | cards held, me / opponent, / 22 |
| stock_size | 1 | cards left in the stock / 20 |
| tricks_won | 2 | me / opponent, / 20 |
| exchange_owed | 2 | a deferred Matto payment is owed by me / by the opponent |
| scores | 2 | cumulative game scores, me / opponent, / 1000 (unbounded) |
| hands_played | 1 | hands played / ``max_hands`` |
| phase | 4 | one-hot: discard, second discard, play, game over |
| shown_void | 2×5 | v1: me / opponent × suit (coins, cups, swords, batons, trumps) shown lacking: not following the suit led shows it is gone, and a plain card on it shows no trumps either (MIL-4.2, B.4.1–B.4.2; the Matto shows nothing) |
| pile_combos | 2 | v2: the combination points (B.5) of my pile (cards won and my discards) / of the cards the opponent won, / 100 |
| combo_gain | 2×62 | v2: per card in neither, what it would add to my pile's / to the opponent's won cards' combination points if that player took it, / 100 (0 for a card in either) |

``shown_void`` is the table memory of RULES.md H.1.1, added in v1 (Millone has no signals, so its
table memory is the public voids only). ``pile_combos`` and ``combo_gain``, added in v2, put a number on
what each card is worth to each pile: the combinations in a player's pile score at the end of the hand
(MIL-5), and a card that completes a cricca or extends a sequence for one player is worth winning,
discarding or keeping from him far beyond its card points. They read only what the player knows: his
own pile (``won`` and ``my_discards``) and the opponent's won cards (his discards are hidden, H.4, so
the opponent's side is what he has shown); computed by the rules' observation kernel
(``tarot_env/rules/millone.py``, the same for this env and the batched engine), once per change of a
pile. Every section is appended, so the earlier ones keep their offsets (an older network is migrated
by zero input columns, ``scripts/migrate_policy.py``).

Exact offsets: ``tarot_env.rules.millone.OBS.describe()``. The observation holds only what the
player knows (RULES.md H.1, H.1.1, H.2, H.4): never the opponent's hand or discards, never the stock; the
tests re-deal every unseen card among those places and check that it does not change.

## Rewards

Default ``reward="deal"``: at the end of every hand each player receives
``(own hand score − opponent's) / reward_scale``, with ``reward_scale = 200`` for Millone (a hand's
score difference under random play has a standard deviation of about 240). A game claim is a
result of its own: ``(claimant's hand combinations) / reward_scale`` to the claimant, the negative
to the other. ``reward="game"``: only at the end, +1 win, −1 loss, 0 draw.

## Rendering and the end-of-hand info: the whole table or one seat's view

``render()`` draws **the whole table**: both hands, both players' hidden discards and the size of the
stock, with card names. It is for spectators and debugging, not what a player may see.
``env.unwrapped.render_view(agent)`` returns the table as that player knows it (RULES.md H.1, H.2, H.4;
``tarot_env.view``): his own hand and discards (the opponent's only as a count), the cards each player
played, the current and the last trick, the card paid for the Matto, a claim's shown cards, the stock's
size, the scores and tricks won. When a hand ends, ``infos[agent]["last_result"]`` is that hand's
record as the player knows it (``MilloneGame.result_view``): ``discards`` keeps his own list and an
empty one for the opponent, ``discards_hidden`` counts per player what is left out, and after a claim
the claimant does not learn the other player's hand combinations (``None``). The full record is
``env.unwrapped.game.history`` (full information, like ``state()``).

## Options

Rules: ``round_suits_inverted`` (``True``: coins and cups pips rank A 6 7 8 9 10, B.2.3;
``False``: like swords and batons, D.8 M-3), ``moors_double_count`` (``True``; ``False``: a
Moor counts in the Grande or the Moors sequence, not both, in the division that scores most, B.5.3.7),
``max_hands`` (100: after that many hands without a winner the game ends as a draw and the
episode is **truncated**; random play ends a game in 4.5 hands on average),
``first_dealer`` (-1 = random, MIL-2.1). Environment: ``reward`` (``"deal"`` | ``"game"``),
``reward_scale`` (200), ``episode`` (``"game"`` | ``"deal"``: one hand per episode, and ``reset()``
without a seed goes on with the next hand; after the game it starts the next game, the player who
did not deal last dealing first), ``illegal_action`` (``"raise"``: ``ValueError`` naming the
action and the legal ones, nothing changes | ``"terminate"``: the game ends and the offender gets
``illegal_reward``, -1), ``render_mode`` (``None`` | ``"ansi"`` | ``"human"``). Unknown options
and bad values raise ``ValueError`` by name.

## Version history

* v0: initial release: observation 700 floats, ``state()`` 888.
* v1 (issue #13): table memory (RULES.md H.1.1): ``shown_void`` appended to the observation (700 →
  710) and to ``state()`` (888 → 898, absolute seats); the v0 sections keep their offsets
  (``scripts/migrate_policy.py`` turns a v0 policy into a v1 one that plays the same); and the
  rules fixes of issue #13 (Matto exchange, combination flags). ``tarocchini/millone-v0`` is no longer
  registered for play: asking for it raises ``ValueError`` naming the current id.
* v2 (issue #12): the piles' combination features appended to the observation (710 → 836):
  ``pile_combos`` (the B.5 points of my pile and of the opponent's won cards) and ``combo_gain`` (what
  each card in neither would add to them). They are functions of the observation's own card sections
  (``won``, ``my_discards``): no new information, but the value of a card to either pile, which the
  networks did not learn to compute (the gap to the search players, issue #12). ``state()`` and the
  rules are unchanged; ``python scripts/migrate_policy.py OLD.pt NEW.pt`` turns a v0 or v1 policy into a
  v2 one that plays the same. ``tarocchini/millone-v1`` raises ``ValueError`` naming
  ``tarocchini/millone-v2``.
"""
from __future__ import annotations

from ..rules.millone import MilloneGame
from .base import TarotAECEnv


class raw_env(TarotAECEnv):
    """The Millone AEC environment without wrappers (see the module docstring)."""

    Game = MilloneGame
    metadata = {"render_modes": ["human", "ansi"], "name": "millone_v2", "is_parallelizable": False}
    default_reward_scale = 200.0


def env(**kwargs) -> raw_env:
    """The registered environment. ``raw_env`` already checks every action and its order, so no
    PettingZoo wrapper is added (they would only slow the loop down)."""
    return raw_env(**kwargs)
