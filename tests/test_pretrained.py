"""The trained policies shipped in agents/pretrained load by name and play legal moves in the AEC env."""
from __future__ import annotations

import pettingzoo
import pytest

pytest.importorskip("torch")

import tarot_env  # noqa: E402
from agents.players.policy import export_policy, load_checkpoint  # noqa: E402
from agents.players.registry import PRETRAINED, load_policy  # noqa: E402


@pytest.mark.parametrize("game", sorted(tarot_env.ENV_IDS))
def test_shipped_policy_loads_by_name_and_plays_a_legal_game(game):
    policy = load_policy("ppo", game)
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game])
    env.reset(seed=1)
    decisions = 0
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else policy.act(obs)
        if action is not None:
            assert obs["action_mask"][action] == 1
            decisions += 1
        env.step(action)  # the env raises on an illegal action
    assert decisions > 50 and env.unwrapped.game.game_over


def test_shipped_policy_of_another_game_is_refused():
    with pytest.raises(ValueError, match="trained for 'partita'"):
        load_policy(str(PRETRAINED / "partita.pt"), "millone")


def test_export_keeps_meta_and_weights_only(tmp_path):
    out = tmp_path / "p.pt"
    export_policy(PRETRAINED / "millone.pt", out)
    ck = load_checkpoint(out, "millone")
    assert set(ck) == {"meta", "model", "format", "format_version"}
    assert ck["meta"]["obs_size"] == load_checkpoint(PRETRAINED / "millone.pt")["meta"]["obs_size"]
