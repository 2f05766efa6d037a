"""Policy-weighted worlds (issue #34; Rebstock et al. 2019): ``pimc:...,weights=policy`` weighs each sampled
world by the network's likelihood of the other seats' plays, replayed in that world from its deal's start."""
from __future__ import annotations

import numpy as np
import pytest

from agents.players.pimc import PIMCPolicy, parse_pimc_name, policy_weights, weighted_means, world_weighting
from agents.players.registry import load_policy
from tarot_env.rules.millone import DISCARDABLE, MilloneGame, Phase
from tarot_env.sampler import Determinizer
from test_millone import random_step, redeal_unseen


class CardWeights:
    """A stand-in network whose probability of a legal card is ``f(card)`` over the legal cards' sum (it
    ignores the observation); with ``never=(b, c)`` it never plays card ``b`` while card ``c`` is legal."""

    def __init__(self, f, never=None):
        self.f, self.never = f, never

    def probs(self, obs, mask):
        p = mask * self.f(np.arange(mask.shape[1]))[None, :]
        if self.never is not None:
            b, c = self.never
            p[mask[:, c], b] = 0.0
        return p / p.sum(axis=1, keepdims=True)


def opponent_led(seed: int) -> MilloneGame:
    """A Millone game (random play) where the non-dealer has just led the first trick: the dealer is to act."""
    rng = np.random.default_rng(seed)
    g = MilloneGame(seed=seed)
    while not (g.phase == Phase.PLAY and len(g.trick) == 1):
        random_step(g, rng)
    assert g.current == g.dealer and not g.tricks
    return g


def test_weights_are_the_product_of_the_networks_probabilities_of_the_other_seats_plays():
    """Hand-checked: the only play of the other seat is his lead ``b`` from his 20 cards (his hand in the
    world plus ``b``), so the weight is ``f(b) / sum of f over those 20``; his discards and the seat's own
    plays are not counted; ``temper`` raises the likelihoods to that power (relative to the largest)."""
    g = opponent_led(3)
    seat, q = g.current, 1 - g.current
    (_, b), = g.trick
    worlds = Determinizer(g, seat).sample(16, np.random.default_rng(0))
    f = lambda c: 1.0 + c  # noqa: E731
    w = policy_weights(worlds, seat, CardWeights(f))
    want = np.array([f(b) / f(np.flatnonzero(x.hands[q] | (np.arange(x.hands.shape[1]) == b))).sum()
                     for x in worlds])
    assert all(x.hands[q].sum() == 19 for x in worlds)
    np.testing.assert_allclose(w, want, rtol=1e-12)
    assert len(set(np.round(want, 12))) > 1  # the worlds' hands differ, and so do their weights
    half = policy_weights(worlds, seat, CardWeights(f), temper=0.5)
    np.testing.assert_allclose(half, np.sqrt(want / want.max()), rtol=1e-12)
    mixed = policy_weights(worlds, seat, CardWeights(f), mix=0.25)  # the model: 3/4 network, 1/4 uniform play
    np.testing.assert_allclose(mixed, 0.75 * want + 0.25 / 20, rtol=1e-12)  # his lead: one of 20 legal cards


def test_with_model_the_worlds_are_weighed_by_that_network_not_the_prior():
    g = opponent_led(3)
    seat = g.current
    worlds = Determinizer(g, seat).sample(8, np.random.default_rng(0))
    prior, model = CardWeights(lambda a: 1.0 + a), CardWeights(lambda a: 1.0 + (a % 5))
    _, _, weigher = world_weighting("policy", 1.0, prior, None, None, 0.0, model)
    np.testing.assert_allclose(weigher(worlds, seat), policy_weights(worlds, seat, model), rtol=1e-12)
    assert not np.allclose(policy_weights(worlds, seat, model), policy_weights(worlds, seat, prior))
    with pytest.raises(ValueError, match="use it with weights=policy"):
        world_weighting("uniform", 1.0, prior, None, None, 0.0, model)
    with pytest.raises(ValueError, match="the model of PIMC must be a trained network, and 'random' is not one"):
        load_policy("ppo+pimc:worlds=4,weights=policy,model=random", "millone")


def test_with_mix_a_card_the_network_never_plays_keeps_the_uniform_shares_weight():
    g = opponent_led(5)
    seat = g.current
    (_, b), = g.trick
    worlds = Determinizer(g, seat).sample(16, np.random.default_rng(1))
    never = CardWeights(lambda a: np.ones(len(a)), never=(b, b))  # b: never played
    assert (policy_weights(worlds, seat, never) < 1e-12).all()
    np.testing.assert_allclose(policy_weights(worlds, seat, never, mix=0.5), 0.5 / 20, rtol=1e-9)


def test_a_world_where_the_seat_played_a_card_it_would_never_play_gets_no_weight():
    g = opponent_led(5)
    seat, q = g.current, 1 - g.current
    (_, b), = g.trick
    known = g.hands[seat] | g.discards[seat] | g.played.any(axis=0)
    c = int(next(x for x in np.flatnonzero(DISCARDABLE & ~known) if x != b))  # unknown to the seat
    worlds = Determinizer(g, seat).sample(64, np.random.default_rng(1))
    w = policy_weights(worlds, seat, CardWeights(lambda a: np.ones(len(a)), never=(b, c)))
    held = np.array([x.hands[q, c] for x in worlds])
    assert held.any() and (~held).any()
    assert (w[held] < 1e-12).all()
    np.testing.assert_allclose(w[~held], 1 / 20, rtol=1e-12)


def test_the_weighted_search_reads_no_hidden_card_and_its_means_are_the_weighted_means():
    """The real game's hidden cards dealt again (the leak tests' re-deal): the same seed gives the same
    weights and values; the search's values are the worlds' weighted means."""
    net = load_policy("ppo", "millone")
    g = opponent_led(7)
    h = redeal_unseen(g, g.current, np.random.default_rng(2))
    assert not np.array_equal(h.hands[1 - g.current], g.hands[1 - g.current])
    out = []
    for x in (g, h):
        p = PIMCPolicy("millone", worlds=6, rollout="random", prior=net, top_k=3, weights="policy", seed=4)
        v = p.evaluate(x)
        out.append((v, p.last["weights"], p.last["per_world"]))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    v, w, per_world = out[0]
    assert w.shape == (6,) and (w > 0).all() and len(set(w)) > 1
    np.testing.assert_allclose(list(v.values()), (w[:, None] * per_world).sum(0) / w.sum())
    np.testing.assert_allclose(weighted_means(per_world, np.zeros(6)), per_world.mean(0))


@pytest.mark.parametrize("name,match", [
    ("pimc:weights=bogus", "weights=uniform .* or weights=policy"),
    ("pimc:weights=policy,temper=x", "bad value 'x' for PIMC option 'temper'"),
    ("pimc:worlds=4,wights=policy", "weights=uniform\\|policy"),
    ("ppo+pimc:weights=policy,mix=1", "mix must be a number in \\[0, 1\\)"),
    ("ppo+pimc:weights=policy,mix=-0.1", "mix must be a number in \\[0, 1\\)"),
    ("ppo+pimc:weights=policy,mix=x", "bad value 'x' for PIMC option 'mix'"),
])
def test_bad_weights_options_are_refused_by_name(name, match):
    with pytest.raises(ValueError, match=match):
        load_policy(name, "millone")


def test_weights_need_a_network_and_a_replayable_deal():
    assert parse_pimc_name("ppo+pimc:weights=policy,temper=0.5") == {
        "rollout": "ppo", "prior": "ppo", "weights": "policy", "temper": 0.5}
    assert load_policy("ppo+pimc:worlds=4,weights=policy", "millone").name.endswith(",weights=policy")
    assert load_policy("ppo+pimc:worlds=4,weights=policy,mix=0.5", "millone").name.endswith(",weights=policy,mix=0.5")
    with pytest.raises(ValueError, match="give a network as prior="):
        load_policy("pimc:rollout=random,weights=policy", "millone")
    with pytest.raises(ValueError, match="temper must be a number in \\(0, 1\\]"):
        load_policy("ppo+pimc:weights=policy,temper=0", "millone")
    # Ottocento's deal has decisions besides the discards and the card play (a monte, declarations)
    g = load_policy("ppo", "ottocento")
    from agents.spec import make_spec

    game = make_spec("ottocento").new_game(1)
    while game.phase.name != "PLAY":
        game.apply_unchecked(int(g.act_games([game])[0]))
    p = PIMCPolicy("ottocento", worlds=2, rollout="random", prior=g, top_k=2, weights="policy", seed=0)
    with pytest.raises(ValueError, match="use weights=uniform"):
        p.evaluate(game)


def test_partita_worlds_are_replayed_from_the_hands_as_dealt():
    """Partita keeps no deck: a world's deal starts again from its hands as dealt (held, played, discarded),
    and the replay ends at the world itself (checked inside); a uniform stand-in gives each world the product
    of 1 / (legal cards) over the other seats' plays, which differs between worlds."""
    from agents.spec import make_spec

    rng = np.random.default_rng(4)
    g = make_spec("partita").new_game(4)
    while not (g.phase.name == "PLAY" and len(g.tricks) == 3):
        g.apply_unchecked(int(rng.choice(np.flatnonzero(g.legal_mask()))))
    worlds = Determinizer(g, g.current).sample(8, rng)
    w = policy_weights(worlds, g.current, CardWeights(lambda a: np.ones(len(a))))
    assert np.isfinite(w).all() and (w > 0).all() and (w < 1).all() and len(set(w)) > 1


def test_the_real_world_weighs_most_when_the_network_made_the_other_seats_plays():
    """Rebstock et al.'s premise, with the opponent model exact: the shipped Partita network plays every seat
    (greedy); at card plays of its first deals, the real deal among 31 sampled worlds takes far more than its
    1/32 of the weight, and is most often the heaviest."""
    from agents.spec import make_spec

    spec = make_spec("partita")
    net = load_policy("ppo", "partita")
    rng = np.random.default_rng(0)
    shares, heaviest = [], []
    for d in range(2):
        g = spec.new_game(100 + d)
        n = 0
        while not g.history:
            n += 1
            if g.phase.name == "PLAY" and n % 9 == 0 and len(g.legal_actions()) > 1:
                worlds = Determinizer(g, g.current).sample(31, rng) + [g.clone()]
                w = policy_weights(worlds, g.current, net)
                shares.append(w[-1] / w.sum())
                heaviest.append(w[-1] == w.max())
            g.apply_unchecked(int(net.act_games([g])[0]))
    assert len(shares) >= 6
    assert np.median(shares) > 5 / 32 and np.mean(heaviest) > 0.5


def test_worlds_replayed_as_sparse_rows_weigh_as_dense_ones():
    """The network reads the engine's sparse observations (``reads_sparse``); the judged plays of every world,
    stacked into one network call, give the weights that dense observations give (a stand-in that reads
    dense rows), in both games with discards."""
    from agents.spec import make_spec

    class Dense:  # the same network, handed dense observations
        def __init__(self, net):
            self.probs = net.probs

    for game in ("millone", "partita"):
        net = load_policy("ppo", game)
        assert net.reads_sparse
        rng = np.random.default_rng(9)
        g = make_spec(game).new_game(9)
        while not (g.phase.name == "PLAY" and len(g.tricks) == 4):
            g.apply_unchecked(int(net.act_games([g])[0]))
        worlds = Determinizer(g, g.current).sample(12, rng)
        w = policy_weights(worlds, g.current, net)
        assert len(set(np.round(w, 12))) > 1
        np.testing.assert_allclose(w, policy_weights(worlds, g.current, Dense(net)), rtol=1e-4)  # float32 sums
