"""SB3 models as players: weights-only loading of the zip (nothing unpickled), refusals, play in the
arena and agents.evaluation.evaluate through the one registry load_policy, and the recipe's training entry point."""
from __future__ import annotations

import importlib.util
import json
import zipfile

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("sb3_contrib") is None,
                                reason="sb3-contrib not installed (extra 'sb3')")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A MaskablePPO trained for a few steps by the recipe's own entry point (tiny settings)."""
    from agents.players.sb3 import train

    path = tmp_path_factory.mktemp("sb3") / "tiny.zip"
    model = train("millone", steps=64, seed=0, out=path, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                  policy_kwargs={"net_arch": [16]})
    return path, model


def test_an_sb3_zip_loads_weights_only_without_unpickling_and_acts_like_the_model(tiny_model, monkeypatch):
    import pickle

    import cloudpickle

    from agents.players.registry import load_policy
    from agents.players.sb3 import SB3Policy
    from tarot_env.wrappers import SingleAgentEnv

    path, model = tiny_model

    def refuse(*a, **k):
        raise AssertionError("an SB3 zip must not be unpickled")

    monkeypatch.setattr(cloudpickle, "loads", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    pol = load_policy(f"sb3:{path}", "millone")
    monkeypatch.undo()
    assert isinstance(pol, SB3Policy) and pol.name == "tiny"
    env = SingleAgentEnv("millone", episode="deal")
    obs, _ = env.reset(seed=3)
    raw = env.aec.game.observation(env.seat)  # the arena hands the game's own vector
    want, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert pol.act(raw, env.action_masks()) == int(want)
    live = SB3Policy.from_model(model, "millone")
    masks = np.stack([env.action_masks()] * 3)
    assert np.array_equal(live.act_batch(np.stack([raw] * 3), masks), pol.act_batch(np.stack([raw] * 3), masks))


def test_an_sb3_model_plays_in_the_arena_and_in_agents_evaluate(tiny_model, capsys):
    from agents.evaluation.arena import main as arena_main, tournament
    from agents.evaluation.evaluate import main as evaluate_main

    path, _ = tiny_model
    res = tournament(["random", f"sb3:{path}"], "millone", 4, chunk=2, bootstrap=50)
    assert res.policies == ["random", f"sb3:{path.parent.name}/tiny"] and res.pairs[0].deals == 4
    assert arena_main(["--game", "millone", "heuristic", f"sb3:{path}", "--deals", "2", "--bootstrap", "20",
                       "--out", str(path.parent / "arena"), "--no-progress"]) == 0
    assert "sb3:" in capsys.readouterr().out
    evaluate_main([f"sb3:{path}", "--game", "millone", "--deals", "4"])
    assert "4 duplicate deals: margin" in capsys.readouterr().out
    assert evaluate_main([f"sb3:{path}", "--deals", "4"]) == 2  # an SB3 zip does not name its game
    assert "--game is needed" in capsys.readouterr().err


def _rewrite(src, dst, edit_data=None, drop=None):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.namelist():
            if item == drop:
                continue
            blob = zin.read(item)
            if item == "data" and edit_data is not None:
                data = json.loads(blob)
                edit_data(data)
                blob = json.dumps(data).encode()
            zout.writestr(item, blob)
    return dst


def test_bad_sb3_files_are_refused_with_a_clear_message(tiny_model, tmp_path):
    from agents.players.registry import load_policy

    path, _ = tiny_model
    with pytest.raises(ValueError, match="trained on another game"):
        load_policy(f"sb3:{path}", "partita")
    with pytest.raises(ValueError, match="does not exist"):
        load_policy(f"sb3:{tmp_path / 'nope.zip'}", "millone")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not an SB3 model zip"):
        load_policy(f"sb3:{tmp_path / 'junk.zip'}", "millone")
    no_weights = _rewrite(path, tmp_path / "nw.zip", drop="policy.pth")
    with pytest.raises(ValueError, match="not an SB3 model zip"):
        load_policy(f"sb3:{no_weights}", "millone")

    def pickled_kwargs(d):
        d["policy_kwargs"] = {":type:": "<class 'dict'>", ":serialized:": "gAR9lC4="}

    with pytest.raises(ValueError, match="pickled policy_kwargs"):
        load_policy(f"sb3:{_rewrite(path, tmp_path / 'pk.zip', pickled_kwargs)}", "millone")

    def other_policy(d):
        d["policy_class"]["__module__"] = "somewhere.else"

    with pytest.raises(ValueError, match="only the actor-critic MLP"):
        load_policy(f"sb3:{_rewrite(path, tmp_path / 'op.zip', other_policy)}", "millone")

    def wider(d):
        d["policy_kwargs"] = {"net_arch": [32]}

    with pytest.raises(ValueError, match="does not fit"):
        load_policy(f"sb3:{_rewrite(path, tmp_path / 'w.zip', wider)}", "millone")


def test_the_recipe_in_docs_sb3_runs_as_written_and_matches_the_command_line_settings(tmp_path, monkeypatch):
    """The docs' Python block, with only the number of steps cut down, and RECIPE_ENV / RECIPE_PPO."""
    import ast
    import re
    from pathlib import Path

    from agents.players.sb3 import RECIPE_ENV, RECIPE_PPO

    doc = (Path(__file__).resolve().parent.parent / "docs" / "sb3.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "MaskablePPO(" in b)
    assert "model.learn(300_000)" in block and 'model.save("sb3/partita.zip")' in block
    calls = {c.func.id: c for c in ast.walk(ast.parse(block))
             if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    kw = lambda call: {k.arg: ast.literal_eval(k.value) for k in calls[call].keywords}  # noqa: E731
    assert kw("make_vec_env")["env_kwargs"] == RECIPE_ENV["partita"] and kw("make_vec_env")["n_envs"] == 4
    assert {k: v for k, v in kw("MaskablePPO").items() if k not in ("seed", "device")} == RECIPE_PPO
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block.replace("model.learn(300_000)", "model.learn(64)"), "docs/sb3.md", "exec"), scope)
    assert (tmp_path / "sb3" / "partita.zip").is_file() and scope["model"].num_timesteps >= 64
