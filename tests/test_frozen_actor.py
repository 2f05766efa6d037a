"""``agents.players.network.FrozenActor``: the greedy actor compiled for the search's rollouts (issue #33).

The rollouts of ``ppo+pimc`` (``agents/players/pimc.py``, ``EngineRollouts._play_out``) play a greedy network in
the batched engine; the compiled actor (``agents.players.sparse_input.greedy_rows``) must choose what
``NetworkPolicy.act_batch`` (torch) chooses. Its logits differ from torch's only by float rounding
(sums in another order), so a choice could flip only where two legal logits tie within rounding: checked
here on the shipped networks at every step of seeded games played half by the network, half at random
(positions the rollouts meet), in every game (the legal actions are RULES.md's: PAR-5, MIL-5, OTT-5 as the
engines' masks give them). Rows not live or with one legal action take their first legal action, as the
rollout loop did before. A search's batches repeat rows (the same seat's view in another world or after
another searched action): a repeated row takes the action of its first occurrence, checked on the batches
of real searches (sampled worlds x searched actions, RULES.md Part H) against torch on every row.
"""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from agents.players.network import ActorCritic, FrozenActor
from agents.players.policy import NetworkPolicy
from agents.players.registry import load_policy
from tarot_env.sampler import Determinizer
from test_vector_load_games import positions

ROWS, STEPS = 64, 40


def _positions(game: str, policy: NetworkPolicy, seed: int):
    """(sparse observations, masks) at each step of ``ROWS`` seeded deals, each row played by the network
    or at random with even odds."""
    venv = tarot_env.make_vec(game, ROWS, seed=seed, episode="deal", obs_format="sparse")
    step = venv.reset()
    rng = np.random.default_rng(seed)
    for _ in range(STEPS):
        yield step.obs, step.mask
        net = policy.act_batch(step.obs, step.mask)
        rand = np.array([rng.choice(np.flatnonzero(m)) for m in step.mask])
        step = venv.step(np.where(rng.random(ROWS) < 0.5, net, rand))


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_frozen_actor_chooses_as_the_network(game):
    policy = load_policy("ppo", game)
    actor = policy.frozen_actor()
    assert isinstance(actor, FrozenActor)
    live = np.ones(ROWS, dtype=bool)
    for obs, mask in _positions(game, policy, seed=3):
        acts = np.empty(ROWS, dtype=np.int64)
        actor.act(obs, mask, live, acts)
        assert np.array_equal(acts, policy.act_batch(obs, mask))


def _search_batches(game: str, policy: NetworkPolicy, seed: int):
    """(sparse observations, masks, live) at each step of the rollouts of a search at seeded positions: 16
    sampled worlds x the network's four most probable actions, each world one engine row per action, played
    out greedily by the network as ``EngineRollouts`` plays them."""
    cfg = tarot_env.make_vec(game, 1).config
    for i, g in enumerate(positions(game, cfg, 4, seed=seed, max_moves=60)):
        legal = g.legal_actions()
        if len(legal) < 2:
            continue
        rows = Determinizer(g, g.current).sample_rows(16, np.random.default_rng(i))
        first = np.tile(legal[:4], 16)
        venv = tarot_env.make_vec(game, len(first), seed=0, episode="deal", obs_format="sparse", **g.config.to_dict())
        venv.load_rows(rows, np.repeat(np.arange(16), len(legal[:4])))
        live = np.ones(len(first), dtype=bool)
        step = venv.step(first, validate=False)
        for _ in range(40):
            live &= ~step.done
            if not live.any():
                break
            yield step.obs, step.mask, live.copy()
            step = venv.step(np.where(live, policy.act_batch(step.obs, step.mask), step.mask.argmax(1)),
                             validate=False)


@pytest.mark.parametrize("game", ["millone", "ottocento"])
def test_repeated_rows_of_a_search_take_the_network_choice(game):
    """Every live row with a choice gets torch's greedy action, the repeated rows (found by the actor, not
    computed again) as well; the search's batches do repeat rows."""
    policy = load_policy("ppo", game)
    actor = policy.frozen_actor()
    repeated = checked = 0
    for obs, mask, live in _search_batches(game, policy, seed=5):
        acts = np.empty(len(live), dtype=np.int64)
        actor.act(obs, mask, live, acts)
        choose = live & (mask.sum(1) > 1)
        assert np.array_equal(acts[choose], policy.act_batch(obs, mask)[choose])
        keys = [(obs.cols[r, :obs.counts[r]].tobytes(), obs.vals[r, :obs.counts[r]].tobytes(), mask[r].tobytes())
                for r in np.flatnonzero(choose)]
        repeated += len(keys) - len(set(keys))
        checked += len(keys)
    assert checked > 1000 and repeated > checked // 10


def test_rows_not_live_or_forced_take_the_first_legal_action():
    policy = load_policy("ppo", "millone")
    obs, mask = next(_positions("millone", policy, seed=1))
    mask = mask.copy()
    mask[1] = False
    mask[1, 7] = True  # one legal action: forced
    live = np.ones(ROWS, dtype=bool)
    live[0] = False
    acts = np.empty(ROWS, dtype=np.int64)
    policy.frozen_actor().act(obs, mask, live, acts)
    assert acts[0] == mask[0].argmax() and acts[1] == 7
    assert np.array_equal(acts[2:], policy.act_batch(obs[2:], mask[2:]))


def test_only_a_greedy_cpu_actor_is_compiled_and_bad_widths_are_refused():
    model = ActorCritic(10, 4, [8])
    assert NetworkPolicy(model, greedy=False).frozen_actor() is None
    actor = NetworkPolicy(model).frozen_actor()
    obs, mask = next(_positions("millone", load_policy("ppo", "millone"), seed=0))
    with pytest.raises(ValueError, match="wide"):
        actor.act(obs, mask, np.ones(ROWS, dtype=bool), np.empty(ROWS, dtype=np.int64))


def test_first_layer_groups_of_ones_sum_to_the_same_bits_as_the_general_sum():
    """The actor's layers (``_axpy``) add the weight rows of a group of four inputs equal to 1.0 without
    multiplying: the same float32 bits as the general sum in the same order (here in numpy, group by group),
    so the same choices."""
    from agents.players.sparse_input import _axpy

    rng = np.random.default_rng(0)
    h, n_in = 72, 300
    flat = rng.normal(size=n_in * h + 5).astype(np.float32)
    for m in (0, 3, 4, 9, 40, 103):
        x = np.where(rng.random(m) < 0.8, 1.0, rng.normal(size=m)).astype(np.float32)
        idx = rng.choice(n_in, size=m, replace=False).astype(np.int32)
        bias = rng.normal(size=h).astype(np.float32)
        ones, general = bias.copy(), bias.copy()
        _axpy(x, idx, m, flat, 5, h, ones)
        w = [flat[5 + j * h:5 + j * h + h] for j in idx]
        k = 0
        while k + 4 <= m:
            general += x[k] * w[k] + x[k + 1] * w[k + 1] + x[k + 2] * w[k + 2] + x[k + 3] * w[k + 3]
            k += 4
        for j in range(k, m):
            general += x[j] * w[j]
        assert np.array_equal(ones.view(np.int32), general.view(np.int32))
