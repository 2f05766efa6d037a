"""Masked PPO self-play (agents/): maths, rollouts, evaluation, checkpoints, resume, CLI. Fast (CPU)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pettingzoo
import pytest
import torch

import tarot_env
from agents.evaluation.evaluate import duplicate_eval
from agents.players.network import ActorCritic, masked, masked_logp_entropy, masked_sample
from agents.players.policy import NetworkPolicy, RandomPolicy, load_checkpoint, load_network_policy
from agents.spec import make_spec
from agents.training.ppo import Args, OpponentPool, load_config, main, train
from agents.training.rollout import SELF, Buffer, Collector, compute_gae, vec_available

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(game="partita", seed=3, total_decisions=4 * 4 * 16, num_envs=4, num_steps=16, hidden=[16],
            num_minibatches=2, update_epochs=2, snapshot_every=1, pool_size=2, eval_every=2, eval_deals=4,
            checkpoint_every=1, progress=False, backend="rules", threads=1)


def tiny(tmp_path: Path, **kw) -> Args:
    d = dict(TINY, log_dir=str(tmp_path / "runs"), save_dir=str(tmp_path / "ck"))
    d.update(kw)
    return Args.from_dict(d)


# --- the masked distribution -----------------------------------------------------------------------
def test_masked_sampling_never_returns_an_illegal_action():
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        mask = torch.from_numpy(rng.random((64, 57)) < rng.uniform(0.02, 0.5))
        mask[torch.arange(64), torch.from_numpy(rng.integers(57, size=64))] = True
        logits = torch.from_numpy(rng.normal(0, 20, (64, 57)).astype(np.float32))
        logits[~mask] += 1e6  # illegal actions with huge raw logits must still never be drawn
        a = masked_sample(masked(logits, mask), g)
        assert mask[torch.arange(64), a].all()


def test_network_and_random_policies_only_choose_legal_actions():
    spec = make_spec("partita")
    net = ActorCritic(spec.obs_size, spec.num_actions, [16])
    for pol in (NetworkPolicy(net, greedy=True), NetworkPolicy(net, greedy=False, seed=1), RandomPolicy(1)):
        game = spec.new_game(5)
        while not game.game_over:
            mask = game.legal_mask()
            a = pol.act(game.observation(game.current), mask)
            assert mask[a]
            game.apply_unchecked(a)


def test_log_probs_and_entropy_match_a_hand_computation():
    logits = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    mask = torch.tensor([[True, False, True, True]])
    logp, ent = masked_logp_entropy(masked(logits, mask), mask, torch.tensor([2]))
    z = math.exp(1) + math.exp(3) + math.exp(4)  # the illegal action 1 is left out
    p = [math.exp(1) / z, math.exp(3) / z, math.exp(4) / z]
    assert logp.item() == pytest.approx(3 - math.log(z), abs=1e-6)
    assert ent.item() == pytest.approx(-sum(q * math.log(q) for q in p), abs=1e-6)
    probs = torch.softmax(masked(logits, mask), -1)
    assert probs[0, 1].item() == 0.0
    # a single legal action: probability 1, entropy 0
    one = torch.tensor([[False, False, True, False]])
    logp1, ent1 = masked_logp_entropy(masked(logits, one), one, torch.tensor([2]))
    assert logp1.item() == pytest.approx(0.0, abs=1e-7) and ent1.item() == pytest.approx(0.0, abs=1e-7)


def test_central_critic_feeds_only_the_value_never_the_actor():
    spec = make_spec("partita")
    net = ActorCritic(spec.obs_size, spec.num_actions, [16], critic="central", state_size=spec.state_size)
    game = spec.new_game(0)
    obs = torch.from_numpy(game.observation(game.current))[None]
    mask = torch.from_numpy(game.legal_mask())[None]
    s1 = torch.from_numpy(game.state_vector())[None]
    s2 = torch.rand_like(s1)
    l1, v1 = net(obs, mask, s1)
    l2, v2 = net(obs, mask, s2)
    assert torch.equal(l1, l2) and not torch.equal(v1, v2)
    s1.requires_grad_(True)
    l1, _ = net(obs, mask, s1)
    l1[mask].sum().backward()
    assert s1.grad is None  # no path from the state to the policy
    assert all("critic_net" not in n for n, p in net.named_parameters() if p.grad is not None)


# --- rollouts: per-seat trajectories and GAE ---------------------------------------------------------
def test_gae_follows_each_seats_chain_by_hand():
    buf = Buffer(8, 1, 2, None)
    # seat A: rows 0 -> 2 -> 4 (done); seat B: rows 1 -> 3 (3 still open)
    buf.size = 5
    buf.value[:5] = [0.5, 0.1, 0.2, 0.3, 0.4]
    buf.reward[:5] = [0.0, 1.0, 0.0, 0.0, 2.0]
    buf.next_value[:5] = [0.2, 0.3, 0.4, 0.0, 0.0]
    buf.done[:5] = [False, False, False, False, True]
    buf.next_idx[:5] = [2, 3, 4, -1, -1]
    buf.closed[:5] = [True, True, True, False, True]
    gamma, lam = 0.9, 0.8
    adv, ret = compute_gae(buf, gamma, lam)
    d4 = 2.0 - 0.4
    d2 = 0.0 + gamma * 0.4 - 0.2
    d0 = 0.0 + gamma * 0.2 - 0.5
    assert adv[4] == pytest.approx(d4)
    assert adv[2] == pytest.approx(d2 + gamma * lam * d4)
    assert adv[0] == pytest.approx(d0 + gamma * lam * (d2 + gamma * lam * d4))
    assert adv[1] == pytest.approx(1.0 + gamma * 0.3 - 0.1)  # successor open: bootstrapped, truncated
    assert adv[3] == 0.0
    assert ret[0] == pytest.approx(adv[0] + 0.5)


def test_win_bonus_pays_the_sign_of_each_nonzero_reward_and_leaves_the_buffer_alone():
    buf = Buffer(8, 1, 2, None)
    buf.size = 4  # four one-decision chains: a deal won, one lost, a tie, and a decision before the end
    buf.value[:4] = [0.1, -0.2, 0.0, 0.3]
    buf.reward[:4] = [0.25, -0.5, 0.0, 0.0]
    buf.next_value[:4] = [0.0, 0.0, 0.0, 0.7]
    buf.done[:4] = [True, True, True, False]
    buf.next_idx[:4] = -1
    buf.closed[:4] = True
    plain, _ = compute_gae(buf, 1.0, 0.95)
    shaped, ret = compute_gae(buf, 1.0, 0.95, win_bonus=0.1)
    assert shaped == pytest.approx(plain + np.array([0.1, -0.1, 0.0, 0.0], dtype=np.float32))
    assert ret[0] == pytest.approx(0.35) and ret[1] == pytest.approx(-0.6) and ret[2] == 0.0
    assert buf.reward[:4].tolist() == [0.25, -0.5, 0.0, 0.0]  # what the env paid stays in the buffer
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="win_bonus"):
            Args(win_bonus=bad)
    with pytest.raises(ValueError, match="win_bonus"):
        Args(win_bonus=True)


def test_rewards_are_credited_to_each_seats_own_decisions_and_match_the_env():
    spec = make_spec("partita", {"deals_per_game": 2})
    col = Collector(spec, 1, 2000, seed=0)
    col.start(lambda: SELF)
    rp = RandomPolicy(0)
    first_game = col.games[0]

    def learner(obs, mask, state):
        return rp.act_batch(obs, mask), np.zeros(len(obs), np.float32), np.zeros(len(obs), np.float32)

    while col.games[0] is first_game:
        col.collect(1, learner, None, lambda: SELF, lambda o, d: None)
    buf = col.buf
    n = buf.size - int((col.open_slot >= 0).sum())  # rows of the finished game
    assert buf.closed[:n].all() and buf.done[:n].sum() == 4  # one final transition per seat
    # follow each seat's chain from its first decision and add up its rewards
    heads = [r for r in range(n) if r not in set(buf.next_idx[:n].tolist())]
    assert len(heads) == 4  # one chain per seat
    totals = []
    for r in heads:
        total = 0.0
        while True:
            total += buf.reward[r]
            if buf.done[r]:
                break
            r = int(buf.next_idx[r])
        totals.append(total)
    sc = first_game.scores
    expected = sorted([(sc[0] - sc[1]) / 80.0] * 2 + [(sc[1] - sc[0]) / 80.0] * 2)
    assert sorted(totals) == pytest.approx(expected, abs=1e-5)


def test_collector_never_records_an_illegal_action_and_opponents_only_play_their_team(tmp_path):
    spec = make_spec("partita")
    args = tiny(tmp_path, self_play_prob=0.0)
    net = ActorCritic(spec.obs_size, spec.num_actions, [16])
    pool = OpponentPool(args, spec, 0)
    col = Collector(spec, 4, 4 * 40, seed=1)
    col.start(pool.sample)
    assert (col.opp == pool.entries[0]["uid"]).all() and pool.entries[0]["kind"] == "random"  # no self-play
    pol = NetworkPolicy(net, greedy=False)

    def learner(obs, mask, state):
        return pol.act_batch(obs, mask), np.zeros(len(obs), np.float32), np.zeros(len(obs), np.float32)

    col.collect(30, learner, pool.act, pool.sample, pool.record)
    n = col.buf.size
    assert 0 < n < 4 * 30  # about half the decisions are the opponents'
    assert col.buf.mask[np.arange(n), col.buf.action[:n]].all()


def test_prioritised_pool_prefers_opponents_that_beat_the_learner(tmp_path):
    spec = make_spec("partita")
    net = ActorCritic(spec.obs_size, spec.num_actions, [16])
    args = tiny(tmp_path, self_play_prob=0.0, pool_size=2, pool_rule="prioritised")
    pool = OpponentPool(args, spec, 0)
    pool.add_snapshot(net, 1, in_use=set())
    rnd, snap = (e["uid"] for e in pool.entries)
    for _ in range(50):
        pool.record(rnd, +10.0)   # the learner beats random play
        pool.record(snap, -10.0)  # the snapshot beats the learner
    draws = [pool.sample() for _ in range(400)]
    assert draws.count(snap) > 0.9 * len(draws)
    uniform = OpponentPool(tiny(tmp_path, self_play_prob=0.0, pool_rule="uniform"), spec, 0)
    uniform.add_snapshot(net, 1, in_use=set())
    draws = [uniform.sample() for _ in range(400)]
    assert 150 < draws.count(uniform.entries[0]["uid"]) < 250
    # snapshots beyond pool_size retire; a retired one keeps playing the games it sits in
    for u in range(2, 5):
        pool.add_snapshot(net, u, in_use={snap})
    assert snap not in [e["uid"] for e in pool.entries] and snap in pool.policies
    pool.add_snapshot(net, 5, in_use=set())
    assert snap not in pool.policies


# --- evaluation ---------------------------------------------------------------------------------------
def test_duplicate_eval_of_a_deterministic_policy_against_itself_is_exactly_even():
    spec = make_spec("partita")
    pol = NetworkPolicy(ActorCritic(spec.obs_size, spec.num_actions, [16]), greedy=True)
    r = duplicate_eval(spec, pol, pol, deals=6, seed=0)
    assert r.mean_margin == 0.0 and r.win_share == 0.0 and r.tie_share == 1.0


def test_duplicate_eval_reports_margin_ci_and_share_won():
    spec = make_spec("partita")
    r = duplicate_eval(spec, RandomPolicy(1), RandomPolicy(2), deals=20, seed=0)
    assert r.deals == 20 and len(r.margins) == 20
    assert r.ci95 == pytest.approx(1.96 * r.margins.std(ddof=1) / math.sqrt(20))
    assert r.win_share == pytest.approx((r.margins > 0).mean())
    assert "95% CI" in str(r)
    lo, hi = r.win_ci95
    assert lo <= r.win_share <= hi and f"[{100 * lo:.1f}, {100 * hi:.1f}]" in str(r)
    assert r.as_dict()["win_ci95"] == [lo, hi]


def test_wilson_interval_known_values_bounds_and_coverage():
    from agents.evaluation.evaluate import wilson_interval

    lo, hi = wilson_interval(970, 1000)  # 97% of 1,000 deals: about ±1 point
    assert lo == pytest.approx(0.95750, abs=2e-5) and hi == pytest.approx(0.97891, abs=2e-5)
    assert wilson_interval(0, 10) == (0.0, pytest.approx(1.96**2 / (10 + 1.96**2)))
    assert wilson_interval(10, 10) == (pytest.approx(10 / (10 + 1.96**2)), 1.0)
    rng = np.random.default_rng(0)  # it holds the true share about 95% of the time
    hits = [lo <= 0.9 <= hi for lo, hi in (wilson_interval(int(k), 200) for k in rng.binomial(200, 0.9, 4000))]
    assert 0.935 <= np.mean(hits) <= 0.965
    for k, n in ((1, 0), (-1, 5), (6, 5)):
        with pytest.raises(ValueError, match="0 <= k <= n"):
            wilson_interval(k, n)


# --- training: smoke, determinism, resume, logs ------------------------------------------------------
def _ck_tensors(path: Path) -> dict[str, torch.Tensor]:
    ck = load_checkpoint(path)
    out = {}

    def walk(prefix, x):
        if isinstance(x, torch.Tensor):
            out[prefix] = x
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(f"{prefix}/{k}", v)
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(f"{prefix}/{i}", v)
        else:
            out[prefix] = x

    for key in ("model", "optimizer", "pool", "ranks", "value_norm"):
        walk(key, ck[key])
    out["step"] = ck["meta"]["step"]
    return out


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], torch.Tensor):
            assert torch.equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


@pytest.mark.parametrize("game,backend,critic", [
    ("partita", "rules", "shared"), ("partita", "vec", "shared"), ("partita", "vec", "central"),
    ("millone", "vec", "central"), ("ottocento", "rules", "shared"), ("ottocento", "vec", "central")])
def test_resume_equals_an_uninterrupted_run_bit_for_bit(tmp_path, game, backend, critic):
    if backend == "vec" and not vec_available(game):
        pytest.skip(f"no vectorised engine the trainer can checkpoint for {game}")
    full = tiny(tmp_path / "a", run_name="r", backend=backend, game=game, critic=critic)
    train(full)
    part = tiny(tmp_path / "b", run_name="r", backend=backend, game=game, critic=critic)
    m = train(part, stop_after_updates=2)  # "killed" right after the checkpoint of update 2
    assert m["update"] == 2 and not (tmp_path / "b/ck/r/final.pt").exists()
    m = train(part, resume=True)
    assert m["update"] == 4
    _same(_ck_tensors(tmp_path / "a/ck/r/final.pt"), _ck_tensors(tmp_path / "b/ck/r/final.pt"))


@pytest.mark.parametrize("backend", ["rules", "vec"])
def test_one_seed_reproduces_a_run_and_another_seed_does_not(tmp_path, backend):
    a = train(tiny(tmp_path / "a", total_decisions=128, eval_every=0, backend=backend))
    b = train(tiny(tmp_path / "b", total_decisions=128, eval_every=0, backend=backend))
    c = train(tiny(tmp_path / "c", total_decisions=128, eval_every=0, seed=4, backend=backend))
    ma, mb, mc = (load_checkpoint(m["checkpoint"])["model"] for m in (a, b, c))
    assert all(torch.equal(ma[k], mb[k]) for k in ma)
    assert not all(torch.equal(ma[k], mc[k]) for k in ma)
    # and the same logged numbers: progress.csv and the returned metrics, all but the clocks
    clocks = ("seconds", "per_s", "per_cpu_s", "collect_share", "time", "checkpoint")
    assert _logged(tmp_path / "a", clocks) == _logged(tmp_path / "b", clocks)
    assert repr({k: v for k, v in a.items() if not any(c in k for c in clocks)}) == \
        repr({k: v for k, v in b.items() if not any(c in k for c in clocks)})  # repr: nan equals nan


def _logged(root: Path, clocks: tuple[str, ...]) -> list[list[str]]:
    """The rows of a run's progress.csv without the columns that measure time."""
    rows = [r.split(",") for r in (root / "runs" / "partita_s3" / "progress.csv").read_text().splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if not any(c in name for c in clocks)]
    assert len(rows) > 1 and "losses/policy" in [rows[0][i] for i in keep]
    return [[r[i] for i in keep] for r in rows]


def test_smoke_config_trains_end_to_end_and_logs_to_tensorboard(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    res = main(["--config", str(ROOT / "configs/smoke.yaml"), f"log_dir={tmp_path}/runs",
                f"save_dir={tmp_path}/ck", "critic=central", "norm_value=true"])
    assert res["step"] >= 2048 and "eval/win_share_vs_random" in res
    run = tmp_path / "runs" / "partita_s1"
    ea = EventAccumulator(str(run)).Reload()
    tags = set(ea.Tags()["scalars"])
    for tag in ("losses/policy", "losses/value", "losses/entropy", "losses/approx_kl", "losses/clipfrac",
                "losses/explained_variance", "charts/decisions_per_s", "eval/margin_vs_random",
                "eval/margin_ci95", "eval/win_share_vs_random", "phase/DISCARD/card_points_kept",
                "phase/PLAY/share_of_decisions"):
        assert tag in tags, tag
    assert len(ea.Scalars("losses/policy")) == res["update"]
    assert (run / "progress.csv").read_text().count("\n") == res["update"] + 1
    assert '"checkpoint"' in capsys.readouterr().out


def test_a_loaded_policy_plays_a_full_game_in_the_aec_env(tmp_path):
    m = train(tiny(tmp_path, total_decisions=64, eval_every=0))
    pol = load_network_policy(m["checkpoint"], "partita")
    env = pettingzoo.make("aec", "tarocchini/partita-v1")
    env.reset(seed=7)
    moves = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        action = None if term or trunc else pol.act(obs)
        if action is not None:
            assert obs["action_mask"][action] == 1
            moves += 1
        env.step(action)
    assert moves == 4 * (2 + 52)


@pytest.mark.parametrize("game", sorted(tarot_env.ENV_IDS))
def test_every_game_trains_and_its_policy_plays_the_aec_env(tmp_path, game):
    m = train(tiny(tmp_path, game=game, total_decisions=128, eval_every=0, eval_deals=2))
    pol = load_network_policy(m["checkpoint"], game)
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game])
    env.reset(seed=1)
    for n, agent in enumerate(env.agent_iter()):
        obs, reward, term, trunc, info = env.last()
        env.step(None if term or trunc else pol.act(obs))
        if n > 3000:
            break
    for name in ("smoke", game):
        if (ROOT / f"configs/{name}.yaml").exists():
            assert load_config(ROOT / f"configs/{name}.yaml").game in (game, "partita")


def test_console_entry_point_is_declared():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["tarot-train"] == "agents.cli:train"  # arguments parsed before torch is imported
    from agents.cli import train  # noqa: F401
    from agents.training.ppo import cli  # noqa: F401  (python -m agents.training.ppo, what torchrun starts)


# --- bad input ----------------------------------------------------------------------------------------
def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ValueError, match="learnin_rate"):
        Args.from_dict({"learnin_rate": 0.1})
    with pytest.raises(ValueError, match="'num_envs' must be of type int"):
        Args.from_dict({"num_envs": "many"})
    with pytest.raises(ValueError, match="'norm_adv' must be of type bool"):
        load_config(None, ["norm_adv=1"])
    with pytest.raises(ValueError, match="unknown game 'tressette'"):
        train(tiny(tmp_path, game="tressette"))
    with pytest.raises(ValueError, match="deals_per_gam"):
        train(tiny(tmp_path, game_options={"deals_per_gam": 2}))
    with pytest.raises(ValueError, match="critic"):
        Args.from_dict({"critic": "oracle"})
    with pytest.raises(SystemExit):
        main(["--config", str(ROOT / "configs/smoke.yaml"), "bogus_key=1"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("game: partita\nseeds: 3\n")
    with pytest.raises(ValueError, match="seeds"):
        load_config(bad)
    for name in ("smoke", "partita"):
        load_config(ROOT / f"configs/{name}.yaml")


def test_checkpoint_for_another_game_or_corrupt_is_refused(tmp_path):
    m = train(tiny(tmp_path, total_decisions=64, eval_every=0))
    path = Path(m["checkpoint"])
    assert torch.load(path, weights_only=True)["meta"]["game"] == "partita"
    with pytest.raises(ValueError, match="trained for game 'partita', not 'ottocento'"):
        load_network_policy(path, "ottocento")
    data = path.read_bytes()
    trunc = tmp_path / "trunc.pt"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        load_network_policy(trunc)
    ck = torch.load(path, weights_only=True)
    k = next(iter(ck["model"]))
    ck["model"][k] = ck["model"][k] + 1.0  # tensors no longer match the checksum
    tampered = tmp_path / "tampered.pt"
    torch.save(ck, tampered)
    with pytest.raises(ValueError, match="checksum"):
        load_network_policy(tampered)
    # a fresh run never overwrites an existing one by accident
    with pytest.raises(ValueError, match="already has a checkpoint"):
        train(tiny(tmp_path, total_decisions=64, eval_every=0))
    # a corrupt last.pt stops --resume before anything is loaded or written
    path.write_bytes(data[:100])
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        train(tiny(tmp_path, total_decisions=64, eval_every=0), resume=True)
    assert path.read_bytes() == data[:100]


@pytest.mark.parametrize("backend", ["rules", "vec"])
def test_ottocento_run_logs_points_declared_and_other_per_hand_statistics(tmp_path, backend):
    """Issue #6: per-phase statistics such as points declared, whichever engine collects the games."""
    res = train(tiny(tmp_path, game="ottocento", backend=backend, num_envs=8, num_steps=64,
                     total_decisions=8 * 64 * 3, eval_every=0, eval_deals=2, checkpoint_every=0,
                     game_options={"episode": "deal"}))
    assert res["backend"] == backend
    for key in ("deal/declared_mean", "deal/combo_mean", "deal/card_points_mean", "deal/scores_mean",
                "phase/DISCARD/card_points_kept", "phase/DECLARE/share_of_decisions"):
        assert key in res, key
    assert res["deal/card_points_mean"] > 0  # cards are worth points in every hand played out


# --- checkpoints: the whole content is verified (issue #16, item 8) -----------------------------------
def _tamper(src: Path, dst: Path, change, rechecksum: bool = False) -> Path:
    from agents.players.policy import content_checksum

    ck = torch.load(src, weights_only=True)
    change(ck)
    if rechecksum:
        ck["meta"]["checksum"] = content_checksum(ck)
    torch.save(ck, dst)
    return dst


def _first_adam_state(ck):
    return ck["optimizer"]["state"][0]


TAMPERINGS = {
    "optimizer tensor": lambda ck: _first_adam_state(ck)["exp_avg"].view(-1)[0].add_(1e-3),
    "optimizer learning rate": lambda ck: ck["optimizer"]["param_groups"][0].__setitem__("lr", 123.0),
    "config in meta": lambda ck: ck["meta"]["config"].__setitem__("learning_rate", 0.5),
    "meta step": lambda ck: ck["meta"].__setitem__("step", -5),
    "engine state": lambda ck: ck["ranks"][0]["collector"]["buffer"]["reward"].view(-1)[0].add_(1.0),
    "random state": lambda ck: ck["ranks"][0]["rng"].__setitem__("update", ck["ranks"][0]["rng"]["update"][:-2] + "7}"),
    "pool counts": lambda ck: ck["pool"]["entries"][0].__setitem__("wins", 99.0),
    "value normaliser": lambda ck: ck["value_norm"].__setitem__("mean", 3.0),
}


@pytest.mark.parametrize("part", sorted(TAMPERINGS))
def test_a_checkpoint_with_any_part_changed_is_refused_before_use(tmp_path, part):
    args = tiny(tmp_path, total_decisions=64, eval_every=0, run_name="r")
    train(args)
    last = tmp_path / "ck/r/last.pt"
    original = last.read_bytes()
    _tamper(last, last, TAMPERINGS[part])
    tampered = last.read_bytes()
    with pytest.raises(ValueError, match="does not match its checksum"):
        train(tiny(tmp_path, total_decisions=128, eval_every=0, run_name="r"), resume=True)
    with pytest.raises(ValueError, match="does not match its checksum"):
        load_network_policy(last)
    assert last.read_bytes() == tampered and tampered != original  # nothing was written


def test_flipped_bytes_anywhere_in_the_file_are_refused(tmp_path):
    import zipfile

    m = train(tiny(tmp_path, total_decisions=64, eval_every=0))
    path = Path(m["checkpoint"])
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        records = sorted((i for i in z.infolist() if "/data/" in i.filename and i.file_size > 8),
                         key=lambda i: i.file_size)
    for info in (records[0], records[len(records) // 2], records[-1]):  # small, middle, largest tensor
        head = data[info.header_offset:info.header_offset + 30]  # the local header: name, extra lengths
        start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        at = start + info.file_size // 2
        bad = tmp_path / "flipped.pt"
        bad.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
        with pytest.raises(ValueError, match="corrupt checkpoint"):
            load_checkpoint(bad)


def test_a_checkpoint_of_another_environment_version_is_refused_by_both_ids(tmp_path):
    m = train(tiny(tmp_path, total_decisions=64, eval_every=0, run_name="r"))
    last = Path(m["checkpoint"])
    env_id = tarot_env.ENV_IDS["partita"]
    _tamper(last, last, lambda ck: ck["meta"].__setitem__("env_id", "tarocchini/partita-v99"), rechecksum=True)
    for attempt in (lambda: load_network_policy(last, "partita"),
                    lambda: train(tiny(tmp_path, total_decisions=128, eval_every=0, run_name="r"), resume=True)):
        with pytest.raises(ValueError, match=f"environment tarocchini/partita-v99, but this tarot_env serves {env_id}"):
            attempt()


def test_an_old_format_checkpoint_plays_but_does_not_resume(tmp_path):
    from agents.players.policy import model_checksum

    m = train(tiny(tmp_path, total_decisions=64, eval_every=0, run_name="r"))
    last = Path(m["checkpoint"])

    def to_v1(ck):
        ck["format_version"] = 1
        ck["meta"]["checksum"] = model_checksum(ck["model"])

    _tamper(last, last, to_v1)
    assert load_network_policy(last, "partita").act_batch is not None  # weights verified by their own checksum
    with pytest.raises(ValueError, match="format version 1.*cannot be resumed|not resumed"):
        train(tiny(tmp_path, total_decisions=128, eval_every=0, run_name="r"), resume=True)


def test_a_resumed_checkpoint_with_a_bad_count_is_refused_even_with_a_matching_checksum(tmp_path):
    m = train(tiny(tmp_path, total_decisions=64, eval_every=0, run_name="r"))
    _tamper(Path(m["checkpoint"]), Path(m["checkpoint"]), lambda ck: ck["meta"].__setitem__("step", -5),
            rechecksum=True)
    with pytest.raises(ValueError, match="meta.step=-5"):
        train(tiny(tmp_path, total_decisions=128, eval_every=0, run_name="r"), resume=True)


# --- the command line (issue #16, item 3) ---------------------------------------------------------------
def test_a_missing_config_file_is_one_line_listing_the_configs(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--config", "configs/nope.yaml"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config file 'configs/nope.yaml' does not exist" in err[0]
    assert "configs/partita.yaml" in err[0] and "configs/smoke.yaml" in err[0]


def test_overrides_may_follow_resume(tmp_path):
    common = [f"log_dir={tmp_path}/runs", f"save_dir={tmp_path}/ck", "threads=1"]
    main(["--config", str(ROOT / "configs/smoke.yaml"), *common, "total_decisions=1024", "eval_every=0"])
    res = main(["--config", str(ROOT / "configs/smoke.yaml"), "--resume", "total_decisions=2048", *common])
    assert res["step"] == 2048


def test_init_from_starts_from_the_files_weights_and_refuses_another_network(tmp_path):
    a = train(tiny(tmp_path / "a", total_decisions=128, eval_every=0))
    src = load_checkpoint(a["checkpoint"])["model"]
    # learning rate 0: the run keeps exactly the weights it started from
    b = train(tiny(tmp_path / "b", total_decisions=128, eval_every=0, seed=9, learning_rate=0.0,
                   init_from=a["checkpoint"]))
    got = load_checkpoint(b["checkpoint"])["model"]
    assert all(torch.equal(src[k], got[k]) for k in src)
    fresh = train(tiny(tmp_path / "c", total_decisions=128, eval_every=0, seed=9, learning_rate=0.0))
    assert not all(torch.equal(src[k], v) for k, v in load_checkpoint(fresh["checkpoint"])["model"].items())
    with pytest.raises(ValueError, match=r"init_from .* has the network .*'hidden': \[16\].* asks for .*\[8\]"):
        train(tiny(tmp_path / "d", hidden=[8], init_from=a["checkpoint"]))
    with pytest.raises(ValueError, match=r"asks for .*\[16, 16\].*as many hidden layers"):
        train(tiny(tmp_path / "e", hidden=[16, 16], init_from=a["checkpoint"]))


def test_init_from_a_narrower_network_starts_a_wider_run_with_the_same_outputs(tmp_path):
    from agents.training.ppo import widen_state

    spec = make_spec("partita")
    for critic in ("shared", "central"):
        torch.manual_seed(0)
        small = ActorCritic(spec.obs_size, spec.num_actions, [16, 8], critic, spec.state_size)
        big = ActorCritic(spec.obs_size, spec.num_actions, [40, 24], critic, spec.state_size)
        big.load_state_dict(widen_state(small.state_dict(), big.state_dict()))
        obs = torch.rand(32, spec.obs_size)
        mask = torch.rand(32, spec.num_actions) < 0.5
        mask[:, 0] = True
        state = torch.rand(32, spec.state_size)
        (l1, v1), (l2, v2) = small(obs, mask, state), big(obs, mask, state)
        assert torch.allclose(l1, l2, atol=1e-6) and torch.allclose(v1, v2, atol=1e-6)
        # the new units are live: their incoming weights are not zero, so the first update moves them
        assert big.trunk[0].weight[16:].abs().sum() > 0 and big.trunk[2].weight[:, 16:].abs().sum() == 0
    with pytest.raises(ValueError, match="does not fit"):
        widen_state(big.state_dict(), small.state_dict())
    # through init_from: a run twice as wide plays exactly like the file at learning rate 0
    a = train(tiny(tmp_path / "a", total_decisions=128, eval_every=0))
    b = train(tiny(tmp_path / "b", hidden=[32], total_decisions=128, eval_every=0, seed=9, learning_rate=0.0,
                   init_from=a["checkpoint"]))
    pa, pb = (load_network_policy(r["checkpoint"], "partita", greedy=True) for r in (a, b))
    seats = duplicate_eval(spec, pa, pb, deals=4, seed=3)
    assert (seats.margins == 0).all()


def test_pool_fixed_takes_any_player_spec(tmp_path):
    from agents.players.baselines import HeuristicPolicy
    from agents.training.ppo import OpponentPool

    args = tiny(tmp_path, self_play_prob=0.0, pool_random=False, snapshot_every=0, pool_fixed=["heuristic", "ppo"])
    pool = OpponentPool(args, make_spec("partita", {}), 0)
    assert [e["name"] for e in pool.entries] == ["fixed:heuristic", "fixed:ppo"]
    assert isinstance(pool.policies[pool.entries[0]["uid"]], HeuristicPolicy)
    m = train(args)  # and a run against it trains and checkpoints
    assert [e["name"] for e in load_checkpoint(m["checkpoint"])["pool"]["entries"]] == ["fixed:heuristic",
                                                                                       "fixed:ppo"]
