"""Expert iteration (issue #34, agents/training/iterate.py): labels from the guided search, the fit, the promotion
match, the run directory (resume, refusals), and labelling on two processes (torchrun, gloo on the CPU)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.evaluation.evaluate import DuplicateResult
from agents.players.policy import load_network_policy, model_checksum
from agents.players.registry import load_policy
from agents.spec import make_spec
from agents.training import iterate as it

ROOT = Path(__file__).resolve().parent.parent
TINY = ["game=millone", "deals=2", "opponents=[random, self]", "worlds=1", "rollout=random", "steps=3",
        "match_deals=2", "threads=1", "seed=3"]


def tiny(run_dir: Path, *more: str) -> it.IterArgs:
    return it.load_iter_config(None, [*TINY, f"run_dir={run_dir}", *more])


def arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if k != "header"}


def record(path: Path) -> dict:
    """A step's match.json less the time its labelling took."""
    rec = json.loads(path.read_text())
    for k in ("label_seconds", "label_cpu_seconds", "fit_seconds"):
        rec.pop(k)
    rec["fit"].pop("seconds")
    rec["match"].pop("seconds")
    return rec


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_network_policy(path, "millone").model.state_dict()


def same_weights(a: Path, b: Path) -> bool:
    return model_checksum(weights(a)) == model_checksum(weights(b))


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """Two uninterrupted steps on one process."""
    run = tmp_path_factory.mktemp("full") / "run"
    records = it.iterate(tiny(run, "iterations=2"), log=lambda s: None)
    return run, records


def test_the_loop_keeps_every_steps_positions_network_and_match(full_run):
    run, records = full_run
    assert [r["step"] for r in records] == [0, 1]
    for k in (0, 1):
        d = run / f"step_{k}"
        assert sorted(p.name for p in d.iterdir()) == ["candidate.pt", "match.json", "positions.npz"]
        rec = json.loads((d / "match.json").read_text())
        assert rec == records[k] and rec["positions"] == len(arrays(d / "positions.npz")["obs"]) > 0
        nxt = run / f"net_{k + 1}.pt"  # the candidate if promoted, else the previous network
        assert same_weights(nxt, d / "candidate.pt" if rec["match"]["promoted"] else run / f"net_{k}.pt")
    assert same_weights(run / "net_0.pt", Path(ROOT / "agents/pretrained/millone.pt"))


def test_an_interrupted_run_goes_on_to_the_uninterrupted_result(full_run, tmp_path):
    full, _ = full_run
    run = tmp_path / "run"
    it.iterate(tiny(run, "iterations=1"), log=lambda s: None)
    (run / "step_0/match.json").unlink()  # killed after the candidate was written: positions and fit kept
    (run / "net_1.pt").unlink()
    it.iterate(tiny(run, "iterations=2"), log=lambda s: None)
    for k in (0, 1):
        a, b = arrays(full / f"step_{k}/positions.npz"), arrays(run / f"step_{k}/positions.npz")
        assert a.keys() == b.keys() and all(np.array_equal(a[x], b[x]) for x in a)
        assert record(full / f"step_{k}/match.json") == record(run / f"step_{k}/match.json")
    assert same_weights(full / "net_2.pt", run / "net_2.pt")


def test_another_runs_directory_is_refused_and_nothing_is_written(full_run, tmp_path):
    run, _ = full_run
    before = sorted(p.name for p in run.rglob("*"))
    with pytest.raises(ValueError, match=r"holds another run \(its run.json differs in \['seed'\]\)"):
        it.iterate(tiny(run, "iterations=3", "seed=4"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="holds no run.json"):
        it.iterate(tiny(other))
    assert sorted(p.name for p in run.rglob("*")) == before and sorted(os.listdir(other)) == ["notes.txt"]


def test_each_position_holds_the_searchs_value_of_every_legal_action_and_is_reproducible():
    spec = make_spec("millone")
    net = load_policy("ppo", "millone")
    args = tiny(Path("unused"), "deals=1", "opponents=[random]", "worlds=2")
    search = it.make_search("millone", net, args)
    asked = []
    evaluate = search.evaluate

    def recorded(g):
        values = evaluate(g)
        asked.append((sorted(values), g.legal_actions()))
        return values

    search.evaluate = recorded
    players = it.opponents("millone", args.opponents, args.seed)
    got = it.label_deal(spec, net, search, players["random"], 0, it.deal_seeds(3, 0, 0))
    assert len(asked) == len(got["obs"]) > 10
    assert all(searched == legal for searched, legal in asked)  # every legal action, not the prior's top few
    for obs, mask, q, v, p in zip(*(got[k] for k in ("obs", "mask", "q", "value", "probs"))):
        assert v == q[mask].max() and (q[~mask] == 0).all()
        np.testing.assert_allclose(p, net.probs(obs[None], mask[None])[0], rtol=1e-6)
    again = it.label_deal(spec, net, search, players["random"], 0, it.deal_seeds(3, 0, 0))
    assert all(np.array_equal(np.array(got[k]), np.array(again[k])) for k in got)


def test_each_position_keeps_the_deals_outcome_for_its_side():
    spec = make_spec("millone")
    net = load_policy("ppo", "millone")
    args = tiny(Path("unused"), "deals=1", "opponents=[self]", "worlds=1")
    search = it.make_search("millone", net, args)
    got = it.label_deal(spec, net, search, None, 0, it.deal_seeds(3, 0, 0))
    s_deal = it.deal_seeds(3, 0, 0).spawn(3)[0]
    g = spec.new_game(int(s_deal.generate_state(1, np.uint64)[0] >> np.uint64(2)))
    sides = []
    while not g.history:  # the same deal, the network greedy at every seat (self-play): the labelled game
        obs, mask = it._observe([g], spec.obs_size, spec.num_actions)
        if mask[0].sum() > 1:
            sides.append(spec.team_of[g.current])
        g.apply_unchecked(int(net.act_batch(obs, mask)[0]))
    sc = g.history[0]["scores"]
    assert sorted(set(sides)) == [0, 1] and len(sides) == len(got["outcome"])
    assert got["outcome"] == [sc[t] - sc[1 - t] for t in sides]


def test_a_central_critic_is_fitted_to_the_outcome_and_a_seats_critic_to_the_searchs_value():
    from types import SimpleNamespace

    data = {"value": np.array([5.0, -3.0], np.float32), "outcome": np.array([20.0, -20.0], np.float32)}
    net = SimpleNamespace(model=SimpleNamespace(critic_kind="central"))
    np.testing.assert_array_equal(it.value_targets(net, data), data["outcome"])
    for kind in ("shared", "separate"):
        net.model.critic_kind = kind
        np.testing.assert_array_equal(it.value_targets(net, data), data["value"])


def test_with_depth_the_labelling_search_cuts_its_rollouts():
    net = load_policy("ppo", "millone")
    search = it.make_search("millone", net, tiny(Path("unused"), "worlds=2", "rollout=network", "depth=6"))
    assert search.depth == 6 and search.name.endswith(",depth=6")
    assert it.make_search("millone", net, tiny(Path("unused"), "worlds=2")).depth == 0


def test_with_top_k_only_the_networks_most_probable_actions_are_searched_and_marked():
    spec = make_spec("millone")
    net = load_policy("ppo", "millone")
    args = tiny(Path("unused"), "deals=1", "opponents=[random]", "worlds=2", "top_k=2")
    search = it.make_search("millone", net, args)
    players = it.opponents("millone", args.opponents, args.seed)
    got = it.label_deal(spec, net, search, players["random"], 0, it.deal_seeds(3, 0, 0))
    assert len(got["obs"]) > 10
    for mask, searched, q, v, p in zip(*(got[k] for k in ("mask", "searched", "q", "value", "probs"))):
        top = sorted(np.flatnonzero(mask), key=lambda a: (-p[a], a))[:2]  # the prior's order, ties by id
        assert sorted(np.flatnonzero(searched)) == sorted(top) and (q[~searched] == 0).all()
        assert v == q[searched].max()


def test_the_improve_target_reweights_the_searched_actions_and_keeps_the_others():
    q = np.array([[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=np.float32)
    searched = np.array([[True, True, False, False], [False, True, True, False]])
    probs = np.array([[0.1, 0.3, 0.4, 0.2], [0.25, 0.25, 0.25, 0.25]], dtype=np.float32)
    t = it.target_probs(q, searched, 2.0, probs, "improve")
    e = np.e  # row 0: 0.1·e and 0.3·1, scaled to the 0.4 the network gave them
    np.testing.assert_allclose(t[0], [0.4 * 0.1 * e / (0.1 * e + 0.3), 0.4 * 0.3 / (0.1 * e + 0.3), 0.4, 0.2],
                               rtol=1e-6)
    np.testing.assert_allclose(t[1], [0.25, 0.5 / (1 + e ** 0.5), 0.5 * e ** 0.5 / (1 + e ** 0.5), 0.25], rtol=1e-6)
    np.testing.assert_allclose(t.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(it.target_probs(q, searched, 1e9, probs, "improve"), probs, rtol=1e-6)  # hot: as is
    cold = it.target_probs(q, searched, 1e-3, probs, "improve")  # cold: the searched mass on the best of them
    np.testing.assert_allclose(cold, [[0.4, 0.0, 0.4, 0.2], [0.25, 0.0, 0.5, 0.25]], atol=1e-6)


def test_the_policy_target_is_the_softmax_of_the_values_at_the_temperature():
    q = np.array([[10.0, 0.0, -50.0], [3.0, 3.0, 0.0]], dtype=np.float32)
    mask = np.array([[True, True, False], [True, True, True]])
    p = it.target_probs(q, mask, 10.0)
    e = np.e
    np.testing.assert_allclose(p[0], [e / (e + 1), 1 / (e + 1), 0.0], rtol=1e-6)
    np.testing.assert_allclose(p[1], np.exp([0.3, 0.3, 0.0]) / np.exp([0.3, 0.3, 0.0]).sum(), rtol=1e-6)


def test_the_fit_moves_the_policy_to_the_search_and_the_value_head_to_its_targets(full_run):
    run, _ = full_run
    spec = make_spec("millone")
    net = load_network_policy(run / "net_0.pt", "millone")
    data, _ = it.load_labels(run / "step_0/positions.npz", spec, net)
    fit = it.fit_labels(net, data, tiny(run, "steps=40", "kl_coef=0.1"), 200.0, seed=0)
    assert fit["ce_after"] < fit["ce_before"] and fit["value_mse_after"] < fit["value_mse_before"]
    assert fit["kl_before"] == pytest.approx(0.0, abs=1e-6) and fit["kl_after"] > 0


@pytest.mark.parametrize("promoted", [False, True])
def test_pool_fits_every_steps_positions_since_the_last_promotion(full_run, tmp_path, promoted):
    full, _ = full_run
    spec = make_spec("millone")
    net = load_network_policy(full / "net_0.pt", "millone")
    run = tmp_path / "run"
    for k in (0, 1):  # step 1's positions: a copy of step 0's, collected by the same network
        (run / f"step_{k}").mkdir(parents=True)
        shutil.copy(full / "step_0/positions.npz", run / f"step_{k}/positions.npz")
    rec = json.loads((full / "step_0/match.json").read_text())
    rec["match"]["promoted"] = promoted
    (run / "step_0/match.json").write_text(json.dumps(rec))
    data, _ = it.load_labels(run / "step_1/positions.npz", spec, net)
    pooled = it.pooled_labels(run, 1, spec, net, data)
    n = len(data["obs"])
    assert len(pooled["obs"]) == (n if promoted else 2 * n) and pooled.keys() == it.LABEL_ARRAYS.keys()
    assert all(np.array_equal(pooled[x][-n:], data[x]) for x in it.LABEL_ARRAYS)


@pytest.mark.parametrize("margins,promoted", [([5.0, 5.0, 5.0, 5.0], True), ([0.0, 0.0, 0.0, 0.0], False),
                                              ([30.0, -20.0, 25.0, -15.0], False), ([8.0, 6.0, 9.0, 7.0], True)])
def test_a_candidate_is_promoted_only_above_zero_at_one_sided_95(monkeypatch, margins, promoted):
    m = np.array(margins)

    def fake(spec, a, b, deals, seed):
        return DuplicateResult(len(m), float(m.mean()), 0.0, float((m > 0).mean()), float((m == 0).mean()), m)

    monkeypatch.setattr("agents.evaluation.evaluate.duplicate_eval", fake)
    r = it.promotion_match(None, None, None, len(m), 0)
    sd = m.std(ddof=1) if len(set(margins)) > 1 else 0.0
    assert r["lower_one_sided_95"] == pytest.approx(m.mean() - 1.6448536269514722 * sd / 2)
    assert r["promoted"] is promoted


def test_a_positions_file_is_checked_before_use(full_run, tmp_path):
    run, _ = full_run
    spec = make_spec("millone")
    net = load_network_policy(run / "net_0.pt", "millone")
    src = run / "step_0/positions.npz"
    with np.load(src, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data["q"] = data["q"].copy()
    data["q"][0, ~data["mask"][0]] = 1.0
    bad = tmp_path / "bad.npz"
    with open(bad, "wb") as f:
        np.savez(f, **data)
    with pytest.raises(ValueError, match="outside its position's legal mask"):
        it.load_labels(bad, spec, net)
    data["q"] = np.load(src)["q"]
    data["searched"] = data["searched"].copy()
    data["searched"][0] = False  # a position with no searched action (and its values not searched)
    with open(bad, "wb") as f:
        np.savez(f, **data)
    with pytest.raises(ValueError, match="value of an action not searched"):
        it.load_labels(bad, spec, net)
    other = load_network_policy(run / "step_0/candidate.pt", "millone")
    with pytest.raises(ValueError, match="another network"):
        it.load_labels(src, spec, other)
    data = arrays(src)  # a format-2 file: no outcomes (before a central critic was fitted to them)
    del data["outcome"]
    header = json.loads(str(np.load(src)["header"][()]))
    data["header"] = np.array(json.dumps({**header, "format": 2}))
    with open(bad, "wb") as f:
        np.savez(f, **data)
    with pytest.raises(ValueError, match="positions format 2, this version reads format 3"):
        it.load_labels(bad, spec, net)


@pytest.mark.parametrize("override,match", [
    ("worlds=0", "worlds must be at least 1"), ("rollout=ppo", "rollout 'ppo': one of"),
    ("weights=both", "weights 'both': one of"), ("temperature=0", "temperature must be a finite number > 0"),
    ("deals=two", "'deals' must be of type int"), ("bogus=1", "unknown config key"),
    ("opponents=[]", "opponents must be a non-empty list"), ("seed=-1", "seed must be a whole number >= 0"),
    ("game=chess", "games are"), ("top_k=-1", "top_k must be 0"), ("target=hard", "target 'hard': one of"),
    ("depth=-2", "depth must be 0"), ("depth=4", "rollout must be 'network'")])
def test_bad_settings_are_refused_by_name(override, match, tmp_path, capsys):
    with pytest.raises(ValueError, match=match):
        it.load_iter_config(None, [*TINY, override])
    assert it.main([*TINY, override, f"run_dir={tmp_path}/r"]) == 2
    assert "tarot-iterate: error" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_two_processes_label_the_same_positions_as_one(full_run, tmp_path):
    """torchrun, 2 CPU ranks (gloo): each labels half the deals, rank 0 gathers, fits and writes: the
    positions and the network are those of one process."""
    full, _ = full_run
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "agents.training.iterate", *TINY, "iterations=1", f"run_dir={run}"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "(2 process(es))" in p.stdout
    a, b = arrays(full / "step_0/positions.npz"), arrays(run / "step_0/positions.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert same_weights(full / "net_1.pt", run / "net_1.pt")
    shutil.rmtree(run)


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("iterate-*.yaml")), ids=lambda p: p.name)
def test_the_shipped_loop_configs_load(path):
    a = it.load_iter_config(path)
    assert a.game in path.name and a.run_dir.startswith("runs/")
