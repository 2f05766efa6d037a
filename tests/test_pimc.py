"""The PIMC search player (agents/players/pimc.py): the registry name, every decision kind, seeding, the
value it searches (the acting side's deal score difference), and the drivers that pass the games."""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from agents.evaluation.arena import run_arena
from agents.evaluation.evaluate import duplicate_eval
from agents.play.human import new_game, play_session
from agents.players.baselines import HeuristicPolicy
from agents.players.pimc import PIMCPolicy, parse_pimc_name
from agents.players.registry import load_policy, policy_label
from agents.spec import make_spec
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
    ("pimc:worlds=x", "bad value"), ("pimc:dept=3", "bad PIMC option"), ("pimc:rollout=pimc", "itself"),
    ("pimc:depth=3", "critic"), ("pimc:depth=x,rollout=ppo", "bad value"), ("ppo+pimc:depth=-1", "depth must be"),
    ("ppo+pimc:depth=4,engine=rules", "batched engine"),
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


# --- the rollouts in the batched engines (EngineRollouts, VecEnv.load_games) -------------------------

def _small_network(game: str, seed: int = 0):
    import torch

    from agents.players.network import ActorCritic
    from agents.players.policy import NetworkPolicy

    torch.manual_seed(seed)
    spec = make_spec(game, {})
    return NetworkPolicy(ActorCritic(spec.obs_size, spec.num_actions, [16]), greedy=True)


def _search_positions(game: str, options: dict):
    """Positions of every kind (``test_vector_load_games.positions``: each phase, a trick under way, a
    pending signal, the Matto played) with at least two legal actions."""
    from test_vector_load_games import _phases, positions

    cfg = tarot_env.make_vec(game, 1, **options).config
    out = []
    for g in positions(game, cfg, len(_phases(game, cfg)), seed=13, max_moves=120):
        while len(g.legal_actions()) < 2:
            g.apply(g.legal_actions()[0])
        out.append(g)
    return out


@pytest.mark.parametrize("game,options", [
    ("partita", {"partita_signals": "bolognese3"}),
    ("millone", {}),
    ("ottocento", {"a_monte": "ask_all", "ott_signal_players": "all"}),
])
def test_engine_rollouts_give_the_rules_rollouts_values_exactly(game, options):
    """Same worlds (same seed), a deterministic greedy network and uniform play: the batched engine's
    values equal the rules objects' at positions of every phase (PIMC's value: the acting side's deal
    score minus the other's)."""
    net = _small_network(game)
    seen, phases = set(), set()
    for g in _search_positions(game, options):
        phases.add(g.phase.name)
        for rollout in (net, "random"):
            fast = PIMCPolicy(game, worlds=3, rollout=rollout, seed=2, engine="vector")
            ref = PIMCPolicy(game, worlds=3, rollout=rollout, seed=2, engine="rules")
            assert fast.engine == "vector" and ref.engine == "rules"
            before = g.to_dict()
            v = fast.evaluate(g)
            if rollout == "random":
                # uniform rollouts in the engine draw in compiled code with their own random stream
                # (<Game>Rows.random_playouts: tests/test_random_playouts.py, and the test below): seeded
                assert v == PIMCPolicy(game, worlds=3, rollout=rollout, seed=2, engine="vector").evaluate(g)
                assert game != "partita" or all(abs(x) <= 40 for x in v.values())
            else:  # the network reads the engine's sparse rows (obs_format="sparse"), the rules' dense ones
                assert v == ref.evaluate(g), (g.phase.name, rollout)
                kept = fast._engine_rollouts
                if game == "ottocento":  # on the worlds' rows, observing only the rows that choose (_actor_playouts)
                    assert kept._buffers and not kept._engines
                else:
                    assert {k[3] for k in kept._engines} == {"sparse"}
            assert g.to_dict() == before  # the searched game is not changed
            seen.update(v.values())
    assert len(seen) > 10  # real deal scores, not a constant
    assert phases == {p.name for p in tarot_env.GAMES[game].rules_class().Phase if p.name != "GAME_OVER"}


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
def test_PAR_6_D_5_C_9_compiled_uniform_rollouts_value_actions_as_the_rules_objects_random_rollouts(game):
    """The same search with uniform rollouts, in compiled code over rows and on the rules objects (two
    random streams): each action's mean value (the deal's score difference: PAR-6, D.5, C.9) over 200
    worlds agrees within 4.5 standard errors."""
    g, rng = new_game(game, 3), np.random.default_rng(0)
    while g.phase.name != "PLAY" or len(g.tricks) < 6 or len(g.legal_actions()) < 3:  # mid-deal, several choices
        g.apply(g.legal_actions()[rng.integers(len(g.legal_actions()))])
    fast = PIMCPolicy(game, worlds=200, rollout="random", seed=5, engine="vector")
    ref = PIMCPolicy(game, worlds=200, rollout="random", seed=6, engine="rules")
    vf, vr = fast.evaluate(g), ref.evaluate(g)
    sf = fast.last["per_world"].std(axis=0) / np.sqrt(200)
    sr = ref.last["per_world"].std(axis=0) / np.sqrt(200)
    assert list(vf) == list(vr) and len(vf) > 1
    assert len(set(vf.values())) > 1  # the actions' values differ: real rollouts
    for i, a in enumerate(vf):
        assert abs(vf[a] - vr[a]) < 4.5 * np.hypot(sf[i], sr[i]) + 1e-9, (a, vf[a], vr[a])


def test_an_action_that_ends_the_deal_is_valued_by_that_deal_OTT_3_2_thrown_in_hand_is_zero():
    """The dealer answering "a monte" after the other three (``a_monte="ask_all"``) throws the hand in
    (OTT-3.2): that action's value is 0, not the next hand's score, on both rollout paths."""
    g = new_game("ottocento", 4, {"a_monte": "ask_all"})
    from tarot_env.rules.ottocento import A_MONTE, PLAY_ON

    for _ in range(3):
        g.apply(A_MONTE)
    assert g.current == g.dealer and g.legal_actions() == [A_MONTE, PLAY_ON]
    for engine in ("vector", "rules"):
        v = PIMCPolicy("ottocento", worlds=4, rollout="random", seed=1, engine=engine).evaluate(g)
        assert v[A_MONTE] == 0.0 and v[PLAY_ON] != 0.0, (engine, v)


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
def test_a_whole_deal_with_engine_pimc_in_every_seat_is_legal_and_reproducible(game):
    net = _small_network(game, 1)

    def run(seed):
        g = new_game(game, 6)
        p = PIMCPolicy(game, worlds=2, rollout=net, seed=seed, engine="vector")
        out = []
        while not g.game_over and not g.history:
            a = p.act_game(g)
            assert g.legal_mask()[a]
            out.append((a, tuple(p.last["values"])))
            g.apply(a)
        return out, p

    a, p = run(3)
    b, _ = run(3)
    assert a == b and sum(len(v) > 1 for _, v in a) > 10
    kept = p._engine_rollouts  # engines (Ottocento: the rows path's buffers, _actor_playouts) reused by batch size
    assert 1 <= len(kept._engines or kept._buffers) <= kept.KEEP


def test_engine_option_auto_picks_the_batched_engine_for_batch_policies_and_bad_choices_raise():
    assert PIMCPolicy("partita", worlds=1, rollout="random").engine == "vector"
    assert PIMCPolicy("partita", worlds=1, rollout=_small_network("partita")).engine == "vector"
    assert PIMCPolicy("partita", worlds=1, rollout="heuristic").engine == "vector"  # compiled, batched
    assert PIMCPolicy("millone", worlds=1, rollout="random", engine="rules").engine == "rules"
    p = load_policy("pimc:worlds=2,rollout=random,engine=rules", "ottocento")
    assert p.engine == "rules" and p.name.endswith("engine=rules")
    p = load_policy("pimc:worlds=2,rollout=random,engine=stepped", "millone")  # the Python-stepped engine
    assert p.engine == "vector" and p._engine_rollouts.stepped and p.name.endswith("engine=stepped")
    with pytest.raises(ValueError, match="engine must be one of"):
        PIMCPolicy("partita", engine="gpu")


def test_engine_rollouts_reuse_one_engine_per_batch_size():
    g = new_game("millone", 2)
    p = PIMCPolicy("millone", worlds=4, rollout="random", seed=0, engine="stepped")  # (auto: no engine, compiled)
    p.evaluate(g)
    first = dict(p._engine_rollouts._engines)
    p.evaluate(g)
    assert len(first) == 1 and p._engine_rollouts._engines == first  # the same engine object again
    (size, _, observe, obs_format), venv = next(iter(first.items()))
    assert size == 4 * len(g.legal_actions()) == venv.num_envs
    assert observe is False and not venv.observe  # uniform rollouts read only the masks
    assert obs_format == "dense"


@pytest.mark.parametrize("game", ["partita", "ottocento"])
def test_the_rollouts_keep_their_compiled_actor_while_the_weights_stay_and_see_a_change(game):
    """A search copies its greedy network's weights for the compiled rollout actor once and keeps them across
    decisions; after an in-place change of the weights (a trainer's step) it plays the new network: its values
    are those of a fresh search with the changed network, on the same worlds (same seed)."""
    import torch

    net = _small_network(game)
    g = max(_search_positions(game, {}), key=lambda g: len(g.legal_actions()))  # (long rollouts)
    p = PIMCPolicy(game, worlds=8, rollout=net, seed=2, engine="vector")
    p.evaluate(g)
    actor = p._engine_rollouts._actor[1]
    p.rng = np.random.default_rng(7)
    before = p.evaluate(g)
    assert p._engine_rollouts._actor[1] is actor and actor.copies(net.model)
    with torch.no_grad():
        for m in (net.model.trunk[0], net.model.pi):
            m.weight.mul_(-3.0)
    assert not actor.copies(net.model)
    p.rng = np.random.default_rng(7)
    changed = p.evaluate(g)
    assert p._engine_rollouts._actor[1] is not actor and changed != before
    ref = PIMCPolicy(game, worlds=8, rollout=net, seed=2, engine="rules")  # torch at every step, nothing kept
    ref.rng = np.random.default_rng(7)
    assert changed == ref.evaluate(g)


def test_millone_engine_rollouts_score_the_hand_not_the_MIL_3_claim_that_follows_it():
    """Late in a hand with high scores, the next deal often lets a player claim the game (MIL-3): the
    value is still the hand's D.5 score difference (its history entry), on both paths."""
    from agents.players.pimc import EngineRollouts, rollout_to_deal_end
    from tarot_env.rules.millone import MilloneGame

    rng = np.random.default_rng(0)
    engine = EngineRollouts("millone")
    claims = compared = 0
    for seed in range(12):
        g = MilloneGame(seed=seed)
        while not (g.phase.name == "PLAY" and len(g.tricks) >= 15 and len(g.legal_actions()) > 1):
            g.apply(g.legal_actions()[rng.integers(len(g.legal_actions()))])
        g.scores[:] = 750 + 10 * (seed % 6)  # (the hand alone does not reach 1000)
        legal, team = g.legal_actions(), g.current
        clones = [g.clone() for _ in legal]
        for c, a in zip(clones, legal):
            c.apply(a)
        net = _small_network("millone", seed)  # deterministic: both paths play the same moves
        ref = rollout_to_deal_end(clones, net, [team] * len(legal), [len(g.history)] * len(legal))
        fast = engine.values([g] * len(legal), legal, net, [team] * len(legal))
        assert np.array_equal(fast, ref), seed
        compared += len(legal)
        claims += sum(len(c.history) > len(g.history) + 1 and "claim" in c.history[len(g.history) + 1] for c in clones)
    assert claims >= 3 and compared > claims


# --- the network-guided search (prior, top_k; "ppo+pimc") ---------------------------------------------
def test_ppo_plus_pimc_name_is_the_network_guided_search():
    assert parse_pimc_name("ppo+pimc") == {"rollout": "ppo", "prior": "ppo"}
    assert parse_pimc_name("ppo+pimc:worlds=8,top_k=3") == {"rollout": "ppo", "prior": "ppo", "worlds": 8, "top_k": 3}
    assert parse_pimc_name("pimc:prior=ppo,rollout=random") == {"prior": "ppo", "rollout": "random"}
    p = load_policy("ppo+pimc:worlds=2", "millone", seed=0)
    assert isinstance(p, PIMCPolicy) and p.needs_game and p.top_k == 4 and p.worlds == 2
    assert p.prior is not None and p.rollout_name == "ppo" and p.engine == "vector"
    assert p.name == "pimc:worlds=2,rollout=ppo,prior=ppo,top_k=4"


@pytest.mark.parametrize("kwargs,match", [
    ({"prior": "heuristic"}, "must be a trained network"), ({"prior": "pimc"}, "must be a trained network"),
    ({"prior": "ppo", "top_k": 0}, "top_k must be"), ({"prior": "ppo", "top_k": True}, "top_k must be"),
    ({"prior": "no/such/file.pt"}, "not a player"),
])
def test_bad_prior_or_top_k_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PIMCPolicy("partita", worlds=1, rollout="random", **kwargs)


@pytest.mark.parametrize("game", list(tarot_env.GAMES))
def test_prior_searches_the_top_k_actions_and_values_them_as_the_plain_search(game):
    """With a prior, exactly the top_k legal actions by the network's probability are searched (most
    probable first), each valued as the plain search values it with the same worlds (the deterministic
    heuristic rollout, so a row's value does not depend on the other rows)."""
    g, rng = new_game(game, 3), np.random.default_rng(0)
    while len(g.legal_actions()) <= 3:  # a decision with more legal actions than top_k
        g.apply(int(rng.choice(g.legal_actions())))
    guided = PIMCPolicy(game, worlds=2, rollout="heuristic", prior="ppo", top_k=3, seed=5)
    plain = PIMCPolicy(game, worlds=2, rollout="heuristic", seed=5)
    probs = guided.prior.probs(g.observation(g.current)[None], g.legal_mask()[None])[0]
    assert probs[~g.legal_mask()].sum() == 0 and abs(probs.sum() - 1) < 1e-9
    want = sorted(g.legal_actions(), key=lambda a: (-probs[a], a))[:3]
    v_guided, v_plain = guided.evaluate(g), plain.evaluate(g)
    assert list(v_guided) == want and guided.last["prior"] == pytest.approx(probs[want].tolist())
    assert {a: v_plain[a] for a in want} == v_guided
    a = guided.act_game(g)  # (a new search: new worlds)
    values = dict(zip(guided.last["actions"], guided.last["values"]))  # ties: the more probable
    assert list(values) == want and a == next(x for x in want if values[x] == max(values.values()))


def test_prior_with_top_k_1_plays_the_networks_greedy_action():
    g = new_game("partita", 1)
    while len(g.legal_actions()) < 2:
        g.apply(g.legal_actions()[0])
    p = PIMCPolicy("partita", worlds=1, rollout="random", prior="ppo", top_k=1, seed=0)
    net = load_policy("ppo", "partita")
    assert p.act_game(g) == int(net.act_batch(g.observation(g.current)[None], g.legal_mask()[None])[0])
    assert p.last["worlds"] == 0  # nothing searched


def _critic_network(game: str, critic: str, seed: int = 0):
    """A small greedy network with a ``critic`` value head (``shared``: on the actor's trunk, ``central``: on the
    state)."""
    import torch

    from agents.players.network import ActorCritic
    from agents.players.policy import NetworkPolicy

    torch.manual_seed(seed)
    spec = make_spec(game, {})
    model = ActorCritic(spec.obs_size, spec.num_actions, [16], critic=critic, state_size=spec.state_size)
    return NetworkPolicy(model, greedy=True)


@pytest.mark.parametrize("game,critic", [
    ("partita", "central"), ("millone", "shared"), ("ottocento", "central"), ("ottocento", "separate"),
])
def test_a_rollout_cut_at_depth_is_valued_by_the_networks_critic_for_the_searching_side(game, critic):
    """``depth=1``: after the searched action, a world whose deal goes on takes the critic's value of the seat to act
    (its full state for a central critic, its observation otherwise) times the env's reward scale, turned to the
    searching side (negated for a seat of the other side); a deal the action ended keeps its score (PAR-6, C.9,
    D.5). Checked world by world on the rules objects; Ottocento's rollouts run on the worlds' rows."""
    from agents.players.pimc import EngineRollouts

    net = _critic_network(game, critic)
    scale = tarot_env.make_vec(game, 1).env_config.reward_scale  # the env's default
    checked = 0
    for g in _search_positions(game, {})[:4]:
        seat = g.current
        team = g.team_of[seat]
        det = Determinizer(g, seat)
        rows = det.sample_rows(3, np.random.default_rng(checked))
        legal = g.legal_actions()[:3]
        got = EngineRollouts(game).values_rows(rows, g.config, legal, net, team, depth=1)
        for i in range(3):
            w = det.view.world(rows, i)
            for j, a in enumerate(legal):
                c = w.clone()
                c.apply_unchecked(a)
                if len(c.history) > len(w.history):  # the action ended the deal: its own score
                    sc = c.history[len(w.history)]["scores"]
                    want = sc[team] - sc[1 - team]
                else:
                    s = c.current
                    v = net.values(c.observation(s)[None], c.state_vector()[None])[0] * scale
                    want = v if c.team_of[s] == team else -v
                assert got[i, j] == pytest.approx(want, rel=1e-4, abs=1e-3), (g.phase.name, i, a)
                checked += 1
    assert checked >= 24


def test_a_depth_past_the_deals_end_is_the_whole_rollout_and_a_cut_search_is_seeded():
    """A cut later than any deal's end leaves the values of the rollouts to the end (``depth=0``); the search
    with a cut gives the same decisions for the same seed, and names its depth."""
    net = _critic_network("partita", "central")
    g = _search_positions("partita", {})[1]
    whole = PIMCPolicy("partita", worlds=4, rollout=net, seed=3).evaluate(g)
    assert PIMCPolicy("partita", worlds=4, rollout=net, seed=3, depth=500).evaluate(g) == whole
    cut = PIMCPolicy("partita", worlds=4, rollout=net, seed=3, depth=2)
    assert cut.evaluate(g) == PIMCPolicy("partita", worlds=4, rollout=net, seed=3, depth=2).evaluate(g) != whole
    assert cut.name.endswith(",depth=2") and parse_pimc_name("ppo+pimc:depth=8")["depth"] == 8
    with pytest.raises(ValueError, match="depth must be"):
        PIMCPolicy("partita", rollout=net, depth=True)
