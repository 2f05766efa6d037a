"""The PIMC search player (agents/pimc.py): the registry name, every decision kind, seeding, the
value it searches (the acting side's deal score difference), and the drivers that pass the games."""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from agents.arena import run_arena
from agents.baselines import HeuristicPolicy
from agents.evaluate import duplicate_eval
from agents.human import new_game, play_session
from agents.pimc import PIMCPolicy, parse_pimc_name
from agents.registry import load_policy, policy_label
from agents.rollout import make_spec
from tarot_env.sampler import Determinizer


def test_registry_builds_pimc_with_its_budget():
    p = load_policy("pimc", "partita", worlds=5, rollout="random", seed=1)
    assert isinstance(p, PIMCPolicy) and p.worlds == 5 and p.rollout_name == "random" and p.needs_game
    q = load_policy("pimc:worlds=3,rollout=heuristic,time=0.5", "millone")
    assert q.worlds == 3 and isinstance(q.rollout, HeuristicPolicy) and q.time_limit == 0.5
    assert load_policy("pimc", "ottocento").worlds == 64  # the default budget
    assert policy_label("pimc:worlds=3") == "pimc:worlds=3"
    assert parse_pimc_name("pimc:chunk=4") == {"chunk": 4}


@pytest.mark.parametrize("bad,match", [
    ("pimc:worlds=x", "bad value"), ("pimc:depth=3", "bad PIMC option"), ("pimc:rollout=pimc", "itself"),
])
def test_bad_pimc_names_raise_value_error(bad, match):
    with pytest.raises(ValueError, match=match):
        load_policy(bad, "partita")


def test_bad_budget_and_non_pimc_keywords_raise_value_error():
    with pytest.raises(ValueError, match="worlds must be"):
        PIMCPolicy("partita", worlds=0)
    with pytest.raises(ValueError, match="time_limit"):
        PIMCPolicy("partita", time_limit=-1)
    with pytest.raises(ValueError, match="unknown game"):
        PIMCPolicy("tarocco")
    with pytest.raises(ValueError, match="for the 'pimc' player"):
        load_policy("random", "partita", worlds=3)


def test_act_without_the_game_says_what_it_needs():
    p = PIMCPolicy("partita", worlds=1, rollout="random")
    g = new_game("partita", 0)
    with pytest.raises(ValueError, match="needs the rules object"):
        p.act(g.observation(g.current), g.legal_mask())
    with pytest.raises(ValueError, match="act_games"):
        p.act_batch(g.observation(g.current)[None], g.legal_mask()[None])
    assert g.legal_mask()[p.act(g.observation(g.current), g.legal_mask(), game=g)]


@pytest.mark.parametrize("game,options", [
    ("partita", {"deals_per_game": 1, "partita_signals": "bolognese3"}),
    ("ottocento", {"ott_signal_players": "all", "a_monte": "ask_all"}),
    ("millone", {}),
])
def test_every_decision_kind_is_searched_and_legal(game, options):
    """One whole deal with PIMC in every seat: discards, a monte, declarations, signals, card play."""
    g = new_game(game, 3, options)
    p = PIMCPolicy(game, worlds=2, rollout="random", seed=0)
    phases, searched, signals = set(), 0, 0
    while not g.game_over and not g.history:
        phase = g.phase.name
        a = p.act_game(g)
        assert g.legal_mask()[a]
        if p.last["worlds"]:
            phases.add(phase)
            searched += 1
            assert len(p.last["values"]) == int(g.legal_mask().sum())
        signals += a >= g.pack.size and phase == "PLAY"
        g.apply(a)
    want = {"partita": {"DISCARD", "PLAY"}, "ottocento": {"A_MONTE", "DISCARD", "DECLARE", "PLAY"},
            "millone": {"DISCARD", "SECOND_DISCARD", "PLAY"}}[game]
    assert want <= phases, phases
    assert searched > 10


def test_same_seed_same_decisions():
    def run(seed):
        g = new_game("ottocento", 5)
        p = PIMCPolicy("ottocento", worlds=3, rollout="random", seed=seed)
        out = []
        while not g.game_over and len(out) < 40:
            a = p.act_game(g)
            out.append((a, tuple(p.last["values"])))
            g.apply(a)
        return out

    a, b = run(1), run(1)
    assert a == b
    assert any(len(v) > 1 for _, v in a)


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
def test_value_is_the_acting_sides_deal_score_difference(game):
    """With one world and a deterministic rollout, the searched value of each action equals the same
    world played out one decision at a time, scored as the acting side's deal score minus the other's."""
    rng = np.random.default_rng(4)
    g = new_game(game, 9)
    for _ in range(30):
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    while len(g.legal_actions()) < 2:
        g.apply(g.legal_actions()[0])
    seat, h0 = g.current, len(g.history)
    p = PIMCPolicy(game, worlds=1, rollout="heuristic", seed=7)
    state = p.rng.bit_generator.state
    values = p.evaluate(g)
    rng2 = np.random.default_rng()
    rng2.bit_generator.state = state
    world = Determinizer(g, seat).sample(1, rng2)[0]
    h = HeuristicPolicy(game)
    for a, v in values.items():
        w = world.clone()
        w.apply(a)
        while len(w.history) == h0:
            w.apply(h.act(w.observation(w.current), w.legal_mask()))
        sc = w.history[h0]["scores"]
        t = g.team_of[seat]
        assert v == sc[t] - sc[1 - t], (a, v, sc)
    assert p.act_game(g) in values


def test_pimc_beats_random_play_on_duplicate_deals():
    spec = make_spec("partita", {})
    res = duplicate_eval(spec, PIMCPolicy("partita", worlds=4, rollout="random", seed=0), deals=4, seed=3)
    assert res.mean_margin > 0, res


def test_arena_and_tarot_play_seat_the_search_player():
    a = run_arena("partita", ["pimc:worlds=2,rollout=random", "random"], deals=2, seed=1, bootstrap=10)
    b = run_arena("partita", ["pimc:worlds=2,rollout=random", "random"], deals=2, seed=1, bootstrap=10)
    assert a.policies == ["pimc:worlds=2,rollout=random", "random"]
    assert np.array_equal(a.pairs[0].margins, b.pairs[0].margins)
    lines = []
    seats = {s: load_policy("pimc:worlds=1,rollout=random", "partita", seed=s) for s in range(4)}
    g = play_session("partita", seats, None, seed=2, options={"deals_per_game": 1}, out=lines.append)
    assert g.game_over and any("game over" in x for x in lines)
