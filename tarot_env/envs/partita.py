"""Partita — ``tarocchini/partita-v1``

Four players in two fixed partnerships play the 54-card French-suited tarot pack: the dealer takes
two extra cards and discards two, the dealer leads, 13 tricks follow under follow-suit / must-trump
/ the Fool as an excuse, and each deal is scored in closed form (80 points per deal, ``score = X − 40``,
zero-sum). A game is four deals. The rules are RULES.md Part E; each clause is cited in the tests.

```python
import pettingzoo, tarot_env
env = pettingzoo.make("aec", "tarocchini/partita-v1", render_mode="ansi")
env.reset(seed=0)
for agent in env.agent_iter():
    obs, reward, termination, truncation, info = env.last()
    action = None if termination or truncation else int(np.flatnonzero(obs["action_mask"])[0])
    env.step(action)
```

| | |
|---|---|
| Agents | ``player_0`` … ``player_3``; teams ``{player_0, player_2}`` and ``{player_1, player_3}`` |
| Action space | ``Discrete(57)`` for every phase |
| Observation | ``Dict(observation=Box(1034,), action_mask=Box(57,) int8)`` |
| State | ``Box(1358,)``: full information (all hands, hidden discards), for centralised critics |
| Import | ``pettingzoo.make("aec", "tarocchini/partita-v1")`` or ``tarot_env.envs.partita.env()`` |

## Actions

One flat id space. A card id means that card in every phase:

| ids | meaning |
|---|---|
| 0–20 | trumps ``XXI XX … II I`` |
| 21 | ``Fool`` |
| 22–29 | spades ``KS QS CS VS 10S 9S 8S 7S`` |
| 30–37 | clubs ``KC QC CC VC 10C 9C 8C 7C`` |
| 38–45 | diamonds ``KD QD CD VD AD 2D 3D 4D`` |
| 46–53 | hearts ``KH QH CH VH AH 2H 3H 4H`` |
| 54–56 | signals ``VOID``, ``LEAD_TRUMPS``, ``WIN_AND_RETURN`` (only with ``partita_signals="bolognese3"``) |

* **Discard** (the dealer, twice): the card to discard. Kings, I, XXI and the Fool are never legal
  (PAR-4.3); trumps II–XX only as far as the dealer lacks other cards (PAR-4.4). A discarded trump
  is announced (PAR-4.5): it appears in every player's observation.
* **Play**: the card to play (PAR-5.2: follow suit, else trump, else anything; the Fool any time).
  With signals on, a player may first choose one signal id; the same player then plays the card the
  signal goes with (PAR-7.1). Signals are public.

``info["legal_actions"]`` of the acting player names its legal actions (``["KS", "signal:VOID"]``).

## Observation (1034 floats, seat-relative: me, right, partner, left)

| slice | size | content |
|---|---|---|
| hand | 54 | my cards |
| my_discards | 54 | my discards, when I dealt (hidden from the others, PAR-4.2) |
| public_discards | 54 | discarded trumps, announced (PAR-4.5) |
| played | 4×54 | cards each seat has played to tricks this deal |
| trick | 4×54 | the current trick, by seat |
| won | 2×54 | cards taken in tricks by my team / the other team |
| signals | 4×3×6 | signals given: seat × signal × suit of its card (4 suits, trumps, Fool) |
| shown_void | 4×5 | seat × suit (♠ ♣ ♦ ♥, trumps) the seat has shown it lacks: it did not follow that suit, and a plain card on a lead it could not follow shows no trumps either (PAR-5.2; public) |
| pending_signal | 3 | the signal I chose for my next card |
| seat_from_dealer | 4 | one-hot, 0 = I deal |
| leader | 4 | one-hot, who led the current trick |
| hand_sizes | 4 | cards held / 15 |
| tricks_won | 2 | my team / other team, / 13 |
| scores | 2 | cumulative game scores, my team / other, / 40 (unbounded) |
| deal | 2 | deals played and deals left, / ``deals_per_game`` |
| phase | 3 | one-hot: discard, play, game over |
| signal_cards | 54×3 | v1: card × signal, the signal each played card carried (PAR-7.1; all 0 without signals) |
| played_trick | 54 | v1: per card, (t + 1) / 13 if it was played in trick t (0 = the first) this deal, else 0 |

The last sections (after ``phase``) are the table memory of RULES.md H.1.1, added in v1 and
appended so that every v0 section keeps its offset (a v0 network is migrated by zero input columns,
``scripts/migrate_policy.py``). Why the signals are encoded this way: ``tarot_env/engine.py``'s
module docstring.

Exact offsets: ``tarot_env.rules.partita.OBS.describe()``. The observation holds only what the
player knows at the table (RULES.md H.1, H.1.1, H.2, H.5); the tests re-deal every unseen card and check
it does not change. ``state()`` (``STATE``, absolute seats) ends with the same two v1 sections.

## Rewards

Shared by partners. Default ``reward="deal"``: at the end of every deal each player receives
``(own team's deal score − other team's) / reward_scale`` (``reward_scale = 80``, so ``score / 40``).
``reward="game"``: only at the end, +1 for the team with the positive total, −1 for the other,
0 for a draw (PAR-6.7).

## Rendering and the end-of-deal info: the whole table or one seat's view

``render()`` draws **the whole table**: every hand and the dealer's hidden discards, with card names.
It is for spectators and debugging, not what any player may see. ``env.unwrapped.render_view(agent)``
returns the table as that seat knows it (RULES.md H.1, H.2, H.5; ``tarot_env.view``): its own hand, its
own discards when it dealt, the discarded trumps (announced, PAR-4.5) and how many others lie face down,
the cards each seat played, the current and the last trick, the signals with the trick and card they
went with, the suits each seat has shown to lack, the scores and tricks won. When a deal ends,
``infos[agent]["last_result"]`` is that deal's record as the seat knows it
(``PartitaGame.result_view``): ``discards`` lists only the discards it knows (all of them for the dealer,
the announced trumps for the others, the partner included) and ``discards_hidden`` counts the rest. The
full record is ``env.unwrapped.game.history`` (full information, like ``state()``).

## Options

Rules: ``deals_per_game`` (4, PAR-3.2), ``partita_signals`` (``"none"`` | ``"bolognese3"``, PAR-7.1),
``first_dealer`` (-1 = random, PAR-3.3). Environment: ``reward`` (``"deal"`` | ``"game"``),
``reward_scale`` (80), ``episode`` (``"game"`` | ``"deal"``: one deal per episode, and ``reset()``
without a seed continues with the next deal; after the last deal it starts the next game, dealt by
the partner of the last dealer, PAR-3.3), ``illegal_action`` (``"raise"``: ``ValueError`` naming the
action and the legal ones, nothing changes | ``"terminate"``: the game ends and the offender gets
``illegal_reward``, -1), ``render_mode`` (``None`` | ``"ansi"`` | ``"human"``). Unknown options and
bad values raise ``ValueError`` by name.

## Version history

* v0: initial release: observation 818 floats, ``state()`` 1142. Before the first published
  release the observation gained ``shown_void`` (798 → 818 floats) and ``state()`` likewise (1122 →
  1142); checkpoints trained on the older layout are refused by their observation size.
* v1 (issue #13): table memory (RULES.md H.1.1): ``signal_cards`` and ``played_trick`` appended to the
  observation (818 → 1034) and to ``state()`` (1142 → 1358); the v0 sections keep their offsets
  (``scripts/migrate_policy.py`` turns a v0 policy into a v1 one that plays the same). The public
  voids were already in v0 (``shown_void``). The rules of Partita are unchanged: the rules fixes of
  issue #13 (Matto exchange, combination flags) concern Millone and Ottocento, which moved to v1 with
  them; every environment moved to v1 together. ``tarocchini/partita-v0`` is no longer registered
  for play: asking for it raises ``ValueError`` naming ``tarocchini/partita-v1``.
"""
from __future__ import annotations

from ..rules.partita import PartitaGame
from .base import TarotAECEnv


class raw_env(TarotAECEnv):
    """The Partita AEC environment without wrappers (see the module docstring)."""

    Game = PartitaGame
    metadata = {"render_modes": ["human", "ansi"], "name": "partita_v1", "is_parallelizable": False}


def env(**kwargs) -> raw_env:
    """The registered environment. ``raw_env`` already checks every action and its order, so no
    PettingZoo wrapper is added (they would only slow the loop down)."""
    return raw_env(**kwargs)
