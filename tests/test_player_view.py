"""A player's view of the table (``env.render_view(agent)``, ``tarot_env.view``) and the end-of-deal
infos hold only what that seat knows (RULES.md Part H); ``render()`` is the whole table."""
from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import tarot_env
from tarot_env.view import render_view

ENVS = {game: importlib.import_module(g.env_module) for game, g in tarot_env.GAMES.items()}
OPTS = {"partita": {"partita_signals": "bolognese3"}, "ottocento": {"ott_signal_players": "all"}, "millone": {}}


def unseen(g, seat: int) -> list[tuple[str, int | None, np.ndarray]]:
    """The places ``seat`` cannot see, each with the cards it holds there: ``(field, row, mask)``
    (RULES.md H.6: the other hands less their declared cards, the hidden discards, Millone's stock)."""
    hidden = g.hidden_from(seat)
    if isinstance(hidden, dict):  # Millone
        opp = 1 - seat
        return [("hands", opp, hidden["hand"]), ("discards", opp, hidden["discards"]),
                ("stock", None, hidden["stock"])]
    hands, discards = hidden
    places = [("hands", s, hands[s]) for s in range(g.num_players)]
    return places + [("discards", g.dealer, discards)]


def redeal_unseen(g, seat: int, rng):
    """A copy of ``g`` where the cards ``seat`` cannot see are dealt again among the places it cannot
    see, each place keeping its number of cards."""
    h = g.clone()
    places = unseen(g, seat)
    cards = rng.permutation(np.concatenate([np.flatnonzero(m) for _, _, m in places]))
    # a game that holds its cards as a row of card sets (Partita, Millone) takes new ones through place_cards
    edit = {f: getattr(h, f).copy() for f, _, _ in places} if hasattr(h, "place_cards") else None
    pos = 0
    for field, row, mask in places:
        arrays = edit[field] if edit is not None else getattr(h, field)
        target = arrays if row is None else arrays[row]
        target &= ~mask
        k = int(mask.sum())
        target[cards[pos:pos + k]] = True
        pos += k
    if edit is not None:
        h.place_cards(**edit)
    return h


def tokens(text: str) -> set[str]:
    return set(re.split(r"[\s:,;()|\[\]]+", text))


def random_positions(game: str, seed: int, every: int = 7):
    """Rules objects along a random game (a clone every ``every`` actions)."""
    G = ENVS[game].raw_env.Game
    from tarot_env.config import make_config

    g = G(make_config(G.Config, OPTS[game]), seed)
    rng = np.random.default_rng(seed)
    i = 0
    while not g.game_over and i < 400:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
        i += 1
        if i % every == 0:
            yield g.clone()


@pytest.mark.parametrize("game", sorted(ENVS))
def test_H_6_the_player_view_does_not_change_when_the_unseen_cards_are_redealt(game):
    rng = np.random.default_rng(0)
    changed = 0  # redeals that changed the whole table (so the test is not vacuous)
    for seed in range(3):
        for g in random_positions(game, seed):
            for seat in range(g.num_players):
                view = render_view(g, seat)
                h = redeal_unseen(g, seat, rng)
                assert render_view(h, seat) == view, f"{game} seed {seed} seat {seat}"
                changed += render_view(h, None) != render_view(g, None)
    assert changed > 20


@pytest.mark.parametrize("game", sorted(ENVS))
def test_H_2_the_player_view_never_names_a_card_of_another_hand_or_a_hidden_discard(game):
    for seed in range(3):
        for g in random_positions(game, seed, every=5):
            for seat in range(g.num_players):
                words = tokens(render_view(g, seat))
                hidden = set()
                for _, _, mask in unseen(g, seat):
                    hidden |= {g.pack.names[c] for c in np.flatnonzero(mask)}
                assert not words & hidden, f"{game} seed {seed} seat {seat}: {words & hidden}"
                own = {g.pack.names[c] for c in np.flatnonzero(g.hands[seat])}
                assert own <= words  # its own hand is shown (H.2)


def test_H_1_1_the_view_tells_each_signal_with_its_trick_and_the_shown_voids():
    g = next(x for x in random_positions("partita", 1, every=30) if x.signals and len(x.tricks) > 2)
    text = render_view(g, 0)
    s, c, k = g.signals[0]
    trick = next(i + 1 for i, (t, _) in enumerate(g.tricks) if (s, c) in t)
    assert f"player_{s} {['VOID', 'LEAD_TRUMPS', 'WIN_AND_RETURN'][k]} with {g.pack.names[c]} (trick {trick})" in text
    if g.shown_void.any():
        assert "shown void in:" in text


def deal_infos(game: str, seed: int, **opts):
    """Every seat's end-of-episode info of each deal of a random game (``episode="deal"``), with the
    full record (``game.history``) of that deal."""
    env = ENVS[game].env(episode="deal", **opts)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(40):
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                break
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(len(legal))]))
        full = env.unwrapped.game.history[-1]
        out.append((full, {env.agent_name_mapping[a]: env.infos[a] for a in env.possible_agents}))
        if env.unwrapped.game.game_over:
            break
        env.reset()
    return out


def test_H_5_partita_deal_info_shows_the_dealer_s_discards_only_to_the_dealer_and_the_trumps_to_all():
    from tarot_env.cards import FRENCH54, TRUMP

    for seed in range(6):
        for full, infos in deal_infos("partita", seed):
            assert len(full["discards"]) == 2  # the full record (game.history) keeps both
            for seat, info in infos.items():
                view = info["last_result"]
                if seat == full["dealer"]:
                    assert view["discards"] == full["discards"] and view["discards_hidden"] == 0
                else:
                    announced = [c for c in full["discards"] if FRENCH54.suit[c] == TRUMP]  # PAR-4.5
                    assert view["discards"] == announced
                    assert view["discards_hidden"] == 2 - len(announced)
                assert {k: v for k, v in view.items() if k not in ("discards", "discards_hidden")} == \
                    {k: v for k, v in full.items() if k != "discards"}
    # a dealer short of plain cards discards a trump (PAR-4.4): announced, so in everyone's view
    rec = dict(full, discards=[FRENCH54.parse("X"), FRENCH54.parse("7S")])
    other = (rec["dealer"] + 2) % 4  # the partner too sees only the announced trump (H.5)
    view = ENVS["partita"].raw_env.Game.result_view(rec, other)
    assert view["discards"] == [FRENCH54.parse("X")] and view["discards_hidden"] == 1
    assert ENVS["partita"].raw_env.Game.result_view(rec, rec["dealer"])["discards"] == rec["discards"]


def test_H_3_ottocento_hand_info_shows_the_discards_to_the_dealer_alone_not_the_partner():
    for seed in range(3):
        for full, infos in deal_infos("ottocento", seed, a_monte="off"):
            if "discards" not in full:  # won at the declarations
                continue
            for seat, info in infos.items():
                view = info["last_result"]
                if seat == full["dealer"]:
                    assert view["discards"] == full["discards"]
                else:
                    assert view["discards"] == [] and view["discards_hidden"] == 2
                assert view["matto_paid"] == full["matto_paid"]  # public (H.3)


def test_H_4_millone_hand_info_shows_each_player_his_own_discards_only():
    hands = 0
    for seed in range(4):
        for full, infos in deal_infos("millone", seed):
            for seat, info in infos.items():
                view = info["last_result"]
                if full.get("claim"):
                    other = 1 - full["claimant"]
                    if seat == full["claimant"]:  # MIL-3: the other player showed nothing
                        assert view["combos"][other] is None and view["claims"][other] is None
                    else:
                        assert view["combos"] == full["combos"]
                    continue
                hands += 1
                assert view["discards"][seat] == full["discards"][seat]
                assert view["discards"][1 - seat] == []
                assert view["discards_hidden"] == [0 if p == seat else len(full["discards"][p]) for p in (0, 1)]
    assert hands > 0


@pytest.mark.parametrize("game", sorted(ENVS))
def test_result_view_is_idempotent_and_leaves_the_record_unchanged(game):
    import copy

    for full, _ in deal_infos(game, 1):
        before = copy.deepcopy(full)
        G = ENVS[game].raw_env.Game
        for seat in range(G.num_players):
            once = G.result_view(full, seat)
            assert G.result_view(once, seat) == once
        assert full == before
