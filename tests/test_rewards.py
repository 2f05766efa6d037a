"""tarot_env.rewards: the one definition of what a seat is paid (docs/environments.md, "Rewards").

"Rewards are shared by partners. Default (``reward="deal"``): at the end of each deal (hand), own
side's score minus the other side's, divided by ``reward_scale``. ``reward="game"``: only +1 / −1 / 0
at the end of the game." Partita and Ottocento seat partners 0-2 / 1-3 (PAR-2, OTT-2); Millone is
played by two players, one per side (MIL-2).
"""
from __future__ import annotations

import numpy as np
import pettingzoo
import pytest

import tarot_env
from tarot_env.rewards import deal_rewards, game_rewards

FOUR = [0, 1, 0, 1]  # team_of for four seats in partnerships 0-2 / 1-3
TWO = [0, 1]


def test_deal_rewards_are_the_side_score_difference_over_reward_scale_shared_by_partners():
    r = deal_rewards([30, 10], FOUR, 80)
    assert r.dtype == np.float64 and r.tolist() == [0.25, -0.25, 0.25, -0.25]
    assert deal_rewards([7, 19], TWO, 200).tolist() == [-12 / 200, 12 / 200]
    assert deal_rewards([5, 5], FOUR, 1).tolist() == [0.0] * 4  # a tied deal pays nothing


def test_deal_rewards_take_any_leading_axes_and_sum_to_zero():
    scores = np.array([[[30, 10], [0, 44]], [[12, 12], [101, -3]]])  # [2, 2, 2]
    r = deal_rewards(scores, FOUR, 4.0)
    assert r.shape == (2, 2, 4)
    np.testing.assert_allclose(r[..., 0], (scores[..., 0] - scores[..., 1]) / 4.0)
    np.testing.assert_array_equal(r[..., 0], r[..., 2])  # partners are paid alike
    np.testing.assert_array_equal(r.sum(-1), 0.0)  # zero-sum between the sides


def test_game_rewards_are_plus_one_minus_one_and_zero_for_a_draw():
    assert game_rewards(0, FOUR).tolist() == [1.0, -1.0, 1.0, -1.0]
    assert game_rewards(1, FOUR).tolist() == [-1.0, 1.0, -1.0, 1.0]
    assert game_rewards(-1, FOUR).tolist() == [0.0] * 4  # winner -1: a drawn game
    assert game_rewards(1, TWO).tolist() == [-1.0, 1.0]
    batch = game_rewards(np.array([0, -1, 1]), TWO)
    assert batch.shape == (3, 2) and batch.tolist() == [[1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]]


@pytest.mark.parametrize("game", sorted(tarot_env.ENV_IDS))
@pytest.mark.parametrize("reward", ["deal", "game"])
def test_the_aec_env_pays_exactly_tarot_env_rewards(game, reward):
    """A random game in the AEC env: every seat's total equals the sum over the deals of
    ``deal_rewards`` (``reward="deal"``) or ``game_rewards`` of the winner (``reward="game"``)."""
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], reward=reward, **_short(game))
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    total = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        _, r, term, trunc, _ = env.last()
        total[agent] += r
        if term or trunc:
            env.step(None)
            continue
        mask = env.observe(agent)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    g = env.unwrapped.game
    cfg = env.unwrapped.env_config
    if reward == "deal":
        want = sum(deal_rewards(h["scores"], g.team_of, cfg.reward_scale) for h in g.history)
    else:
        want = game_rewards(g.winner, g.team_of)
    np.testing.assert_allclose([total[a] for a in env.possible_agents], want, rtol=0, atol=1e-12)
    assert len(g.history) >= 1


def _short(game: str) -> dict:
    """Options for a short game (one or two deals), so the test stays fast."""
    return {"partita": {"deals_per_game": 1}, "millone": {"max_hands": 2}, "ottocento": {"max_hands": 2}}[game]


def test_final_info_gives_each_seat_its_view_of_the_last_deal_and_the_engines_the_full_record():
    """The end-of-episode info (docs/environments.md): ``scores``, ``winner`` and ``last_result``, the
    last deal's record as that seat knows it (RULES.md H: other seats' hidden discards left out)."""
    from tarot_env.rewards import final_info
    from tarot_env.rules.partita import PartitaGame

    record = {"dealer": 0, "scores": [3, 1], "discards": [0, 21, 22]}  # the dealer's discards (PAR-4.5)
    full = final_info(np.array([30, 12]), np.int64(0), record)
    assert full == {"scores": [30, 12], "winner": 0, "last_result": record}
    assert type(full["scores"][0]) is int and type(full["winner"]) is int
    mine = final_info([30, 12], 0, record, Game=PartitaGame, seat=2)
    assert mine["last_result"] == PartitaGame.result_view(record, 2)
    assert mine["last_result"]["discards"] == [0] and mine["last_result"]["discards_hidden"] == 2  # trump shown
    assert final_info([30, 12], 0, record, Game=PartitaGame, seat=0)["last_result"]["discards"] == [0, 21, 22]
    assert final_info([0, 0], None, None, Game=PartitaGame, seat=1) == {
        "scores": [0, 0], "winner": None, "last_result": None}
    with pytest.raises(ValueError, match="Game"):
        final_info([0, 0], 0, record, seat=1)

