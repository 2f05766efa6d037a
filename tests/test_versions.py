"""Environment versions (issues #13, #12): one table of ids (Partita at v1, Millone and Ottocento at v2),
removed ids refused by name, and the migration of an older policy (scripts/migrate_policy.py) that plays
exactly as before."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pettingzoo
import pytest

import tarot_env
from tarot_env.vector import make_vec
from tarot_env.wrappers import GYM_IDS, SingleAgentEnv

ROOT = Path(__file__).resolve().parent.parent
GAMES = sorted(tarot_env.GAMES)


CURRENT = {"partita": "v1", "millone": "v2", "ottocento": "v2"}


def test_one_table_of_env_ids_at_their_current_versions():
    assert tarot_env.ENV_IDS == {g: f"tarocchini/{g}-{CURRENT[g]}" for g in GAMES}
    assert tarot_env.ENV_VERSIONS == CURRENT
    assert GYM_IDS == {g: f"tarocchini/{g}-single-{CURRENT[g]}" for g in GAMES}
    for g in GAMES:
        env = pettingzoo.make("aec", tarot_env.ENV_IDS[g])
        assert env.metadata["name"] == f"{g}_{CURRENT[g]}"
        doc = importlib.import_module(tarot_env.GAMES[g].env_module).__doc__
        assert doc.startswith(f"{g.capitalize()} — ``{tarot_env.ENV_IDS[g]}``")  # the env page's title
        history = doc.split("## Version history", 1)[1]
        assert "* v0:" in history and "* v1" in history and "H.1.1" in history
        assert f"* {CURRENT[g]}" in history
    rules = importlib.import_module(tarot_env.GAMES["ottocento"].rules_module)
    assert rules.OBS_SIZES == {"v0": 1164, "v1": 1432, "v2": 1558}  # each a prefix of the next
    rules = importlib.import_module(tarot_env.GAMES["millone"].rules_module)
    assert rules.OBS_SIZES == {"v0": 700, "v1": 710, "v2": 836}


REMOVED = [(g, f"tarocchini/{g}-v0") for g in GAMES] + [(g, f"tarocchini/{g}-v1") for g in ("millone", "ottocento")]


@pytest.mark.parametrize("game,old", REMOVED)
def test_a_removed_version_is_refused_naming_the_current_id(game, old):
    new = tarot_env.ENV_IDS[game]
    assert tarot_env.REMOVED_ENV_IDS[old] == new
    for make in (lambda: pettingzoo.make("aec", old), lambda: make_vec(old, 2, seed=0),
                 lambda: SingleAgentEnv(old), lambda: tarot_env.game_key(old)):
        with pytest.raises(ValueError, match=f"'{old}' is a removed version.*current one is '{new}'"):
            make()
    assert tarot_env.game_key(new) == game and make_vec(new, 2, seed=0).num_envs == 2
    assert isinstance(pettingzoo.make("aec", f"tarocchini/{game}"), pettingzoo.AECEnv)  # unversioned: current


# --- migrating a v0 policy ------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
from agents.players.network import ActorCritic  # noqa: E402
from agents.players.policy import build_model, load_checkpoint, load_network_policy, save_checkpoint  # noqa: E402
from agents.players.registry import PRETRAINED  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from migrate_policy import migrate, migrate_file  # noqa: E402


def observations(game: str, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """v1 observations, masks and states of random play, with the v1 sections in use."""
    venv = make_vec(game, 16, seed=1, **({"partita_signals": "bolognese3"} if game == "partita" else {}))
    step, rng = venv.reset(), np.random.default_rng(0)
    obs, masks, states = [], [], []
    while len(obs) * 16 < n:
        obs.append(step.obs.copy())
        masks.append(step.mask.copy())
        states.append(venv.state())
        step = venv.step((rng.random(step.mask.shape) * step.mask).argmax(1))
    return np.concatenate(obs), np.concatenate(masks), np.concatenate(states)


def v0_checkpoint(path: Path, game: str, critic: str, version: str = "v0") -> Path:
    """A policy file of an old ``version`` as the trainer wrote them (its sizes and ids), random weights."""
    rules = importlib.import_module(tarot_env.GAMES[game].rules_module)
    torch.manual_seed(0)
    obs0, st0 = rules.OBS_SIZES[version], rules.STATE_SIZES[version]
    net = ActorCritic(obs0, rules.NUM_ACTIONS, [64, 32], critic, st0)
    meta = {"game": game, "env_id": f"tarocchini/{game}-{version}", "env_version": version,
            "obs_size": obs0, "state_size": st0, "num_actions": rules.NUM_ACTIONS,
            "config": {"hidden": [64, 32], "critic": critic, "game_options": {}}, "update": 1, "step": 1}
    save_checkpoint(path, {"meta": meta, "model": net.state_dict()})
    return path


def assert_plays_as_before(src: Path, dst: Path, game: str) -> None:
    """The migrated network's logits (and value) on current inputs equal the old network's on their old
    part (the prefix of the old version's size)."""
    v0 = load_checkpoint(src, game, any_env_version=True)
    OBS0, STATE0 = v0["meta"]["obs_size"], v0["meta"]["state_size"]
    old = build_model(v0["meta"])
    old.load_state_dict(v0["model"])
    before = src.read_bytes()
    meta = migrate_file(src, dst)
    assert src.read_bytes() == before  # the source is only read
    rules = importlib.import_module(tarot_env.GAMES[game].rules_module)
    assert (meta["env_id"], meta["env_version"]) == (tarot_env.ENV_IDS[game], tarot_env.ENV_VERSIONS[game])
    assert (meta["obs_size"], meta["state_size"]) == (rules.OBS.size, rules.STATE.size)
    new = load_network_policy(dst, game).model  # the v1 size checks pass
    obs, mask, state = observations(game)
    assert obs[:, OBS0:].any() and (STATE0 == rules.STATE.size or state[:, STATE0:].any())  # new inputs in use
    o, m, st = torch.as_tensor(obs), torch.as_tensor(mask), torch.as_tensor(state)
    with torch.no_grad():
        a = old.masked_logits(o[:, :OBS0], m)
        b = new.masked_logits(o, m)
        # zero columns add exact zeros (bit-identical here; a BLAS may sum in another order)
        assert torch.allclose(a[m], b[m], rtol=0, atol=1e-5)
        assert torch.equal(a.argmax(1), b.argmax(1))  # the same greedy moves
        _, va = old(o[:, :OBS0], m, st[:, :STATE0])
        _, vb = new(o, m, st)
        assert torch.allclose(va, vb, rtol=0, atol=1e-5)
    zero = new.trunk[0].weight[:, OBS0:]
    assert zero.shape[1] == rules.OBS.size - OBS0 and not zero.any()


@pytest.mark.parametrize("game,critic,version", [("partita", "central", "v0"), ("millone", "shared", "v0"),
                                                 ("ottocento", "separate", "v0"), ("millone", "central", "v0"),
                                                 ("ottocento", "central", "v1"), ("ottocento", "separate", "v1"),
                                                 ("millone", "shared", "v1"), ("millone", "central", "v1")])
def test_migrated_old_policy_gives_the_old_logits_and_values_on_the_old_features(game, critic, version, tmp_path):
    src = v0_checkpoint(tmp_path / "old.pt", game, critic, version)
    assert_plays_as_before(src, tmp_path / "new.pt", game)


@pytest.mark.parametrize("game", GAMES)
def test_shipped_v0_policy_migrates_and_plays_as_before(game, tmp_path):
    src = PRETRAINED / f"{game}.pt"
    if load_checkpoint(src, any_env_version=True)["meta"]["env_version"] != "v0":
        pytest.skip(f"{src.name} is already {tarot_env.ENV_VERSIONS[game]} (migrated)")
    assert_plays_as_before(src, tmp_path / f"{game}_v1.pt", game)


def test_migration_refuses_what_is_not_a_v0_checkpoint(tmp_path):
    src = v0_checkpoint(tmp_path / "v0.pt", "millone", "shared")
    with pytest.raises(ValueError, match="refusing to overwrite"):
        migrate_file(src, src)
    dst = tmp_path / "m.pt"
    migrate_file(src, dst)
    with pytest.raises(ValueError, match="'tarocchini/millone-v2'.*the current version: nothing to migrate"):
        migrate(load_checkpoint(dst), str(dst))
    bad = load_checkpoint(src, any_env_version=True)
    bad["meta"] = {**bad["meta"], "env_id": "tarocchini/millone-v7", "env_version": "v7"}
    with pytest.raises(ValueError,
                       match="this script migrates \\['tarocchini/millone-v0', 'tarocchini/millone-v1'\\]"):
        migrate(bad)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "migrate_policy.py"), str(dst),
                        str(tmp_path / "again.pt")], capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "nothing to migrate" in r.stderr and not (tmp_path / "again.pt").exists()
