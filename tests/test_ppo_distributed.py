"""Issue #14: data-parallel PPO with torch.distributed (2 CPU ranks, gloo), devices, rank helpers.

The torchrun runs are started once per module (``two_rank_runs``): an uninterrupted 4-update run with
the weight check on, and the same run killed after 2 updates and resumed to 4.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.players.network import ActorCritic
from agents.players.policy import load_checkpoint
from agents.spec import make_spec
from agents.training.distributed import Ranks, rank_seed, rank_share, resolve_device, weights_digest
from agents.training.ppo import Args, main, minibatch_slices, packed_transfer, train
from test_ppo import _ck_tensors, _same

ROOT = Path(__file__).resolve().parent.parent
ROLLOUT = 8 * 16  # num_envs * num_steps: decisions per update
TINY = ["game=partita", "seed=5", "num_envs=8", "num_steps=16", "hidden=[16]", "num_minibatches=2",
        "update_epochs=2", "snapshot_every=1", "pool_size=2", "eval_every=2", "eval_deals=4",
        "checkpoint_every=1", "progress=false", "backend=vec", "critic=central", "threads=1", "run_name=r"]


def torchrun(tmp: Path, *extra: str, resume: bool = False) -> subprocess.CompletedProcess:
    """``python -m torch.distributed.run --standalone --nproc_per_node=2 -m agents.training.ppo`` on TINY."""
    flag = ["--resume"] if resume else []  # overrides on both sides of --resume (issue #16, item 3)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "agents.training.ppo", *TINY, *flag, f"log_dir={tmp}/runs", f"save_dir={tmp}/ck", *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


@pytest.fixture(scope="module")
def two_rank_runs(tmp_path_factory):
    full = tmp_path_factory.mktemp("full")
    torchrun(full, f"total_decisions={4 * ROLLOUT}", "check_sync=true")
    part = tmp_path_factory.mktemp("part")
    torchrun(part, f"total_decisions={2 * ROLLOUT}")
    torchrun(part, f"total_decisions={4 * ROLLOUT}", resume=True)
    return full, part


def test_two_cpu_ranks_train_with_identical_weights_and_rank0_alone_writes(two_rank_runs):
    full, _ = two_rank_runs
    summary = json.loads((full / "runs/r/summary.json").read_text())
    assert summary["world_size"] == 2 and summary["update"] == 4 and summary["step"] == 4 * ROLLOUT
    assert summary["sync_checks"] == 4  # every update, every rank's weight digest equal to rank 0's
    assert len(list((full / "runs/r").glob("events.out.tfevents*"))) == 1  # one TensorBoard writer
    assert (full / "runs/r/progress.csv").read_text().count("\n") == 4 + 1  # one row per update, once
    assert sorted(p.name for p in (full / "ck/r").iterdir()) == ["final.pt", "last.pt"]
    ck = load_checkpoint(full / "ck/r/final.pt")
    assert ck["meta"]["world_size"] == 2 and len(ck["ranks"]) == 2
    # each rank played its own games with its own streams
    r0, r1 = ck["ranks"]
    assert r0["collector"]["rng"] != r1["collector"]["rng"]
    assert not torch.equal(r0["rng"]["sample"], r1["rng"]["sample"])


def test_a_killed_two_rank_run_resumes_exactly(two_rank_runs):
    full, part = two_rank_runs
    assert load_checkpoint(part / "ck/r/final.pt")["meta"]["update"] == 4
    _same(_ck_tensors(full / "ck/r/final.pt"), _ck_tensors(part / "ck/r/final.pt"))  # every part, every rank


def test_resuming_with_another_number_of_ranks_is_refused(two_rank_runs, tmp_path):
    full, _ = two_rank_runs
    args = Args.from_dict(dict(run_name="r", log_dir=str(tmp_path / "runs"), save_dir=str(full / "ck"),
                               total_decisions=8 * ROLLOUT, progress=False))
    before = (full / "ck/r/last.pt").read_bytes()
    with pytest.raises(ValueError, match=r"run of 2 rank\(s\).*this run has 1.*--nproc_per_node=2"):
        train(args, resume=True)
    assert (full / "ck/r/last.pt").read_bytes() == before


def test_a_rank_that_cannot_reach_the_rendezvous_stops_with_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), WORLD_SIZE="2", RANK="1", LOCAL_RANK="1",
               LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    p = subprocess.run([sys.executable, "-m", "agents.training.ppo", "--config", str(ROOT / "configs/smoke.yaml"),
                        "dist_timeout_s=2", f"log_dir={tmp_path}/runs", f"save_dir={tmp_path}/ck"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"rank 1/2: could not join the other ranks at 127.0.0.1:{port} within 2 s" in lines[0]
    assert not (tmp_path / "ck").exists()


# --- the rank helpers ----------------------------------------------------------------------------------
def test_weight_digest_tells_apart_weights_one_ulp_apart():
    spec = make_spec("partita")
    a = ActorCritic(spec.obs_size, spec.num_actions, [16])
    b = ActorCritic(spec.obs_size, spec.num_actions, [16])
    b.load_state_dict(a.state_dict())
    assert weights_digest(a) == weights_digest(b)
    with torch.no_grad():
        w = b.trunk[0].weight
        w[3, 7] = torch.nextafter(w[3, 7], torch.tensor(1.0))
    assert weights_digest(a) != weights_digest(b)


def test_check_in_sync_raises_when_a_rank_differs(monkeypatch):
    import agents.training.distributed as distributed

    spec = make_spec("partita")
    net = ActorCritic(spec.obs_size, spec.num_actions, [16])
    monkeypatch.setattr(distributed, "all_gather", lambda r, x: [x, x])
    distributed.check_in_sync(Ranks(rank=0, world=2), net, 3)  # equal digests: fine
    monkeypatch.setattr(distributed, "all_gather", lambda r, x: [x, x + 1])
    with pytest.raises(RuntimeError, match="weights differ after update 3"):
        distributed.check_in_sync(Ranks(rank=0, world=2), net, 3)


def test_the_rank_helpers_live_in_agents_distributed_and_agents_ppo_still_names_them():
    import agents.training.distributed as distributed
    import agents.training.ppo as ppo

    for name in ("Ranks", "init_ranks", "close_ranks", "resolve_device", "default_threads", "rank_seed",
                 "rank_share", "broadcast", "all_gather", "gather_to_main", "all_sum", "weights_digest",
                 "check_in_sync"):
        assert getattr(ppo, name) is getattr(distributed, name), name
    # one process: every collective is the identity, and no process group is joined
    one = Ranks()
    assert distributed.all_sum(one, np.array([2.0])).tolist() == [2.0]
    assert distributed.all_gather(one, 3) == [3] and distributed.gather_to_main(one, 3) == [3]
    assert distributed.broadcast(one, "x") == "x"
    net = torch.nn.Linear(2, 2)
    assert distributed.wrap_ddp(net, one, torch.device("cpu")) is net
    distributed.barrier(one)


def test_games_and_seeds_are_split_between_ranks():
    assert [rank_share(10, Ranks(rank=r, world=3)) for r in range(3)] == [4, 3, 3]
    assert rank_seed(7, 0) == 7  # one process: the run's own seed, unchanged
    seeds = {rank_seed(7, r) for r in range(4)}
    assert len(seeds) == 4 and rank_seed(7, 2) == rank_seed(7, 2)


@pytest.mark.parametrize("n,k", [(16000, 8), (100, 8), (9, 4), (3, 4), (0, 2)])
def test_minibatch_slices_are_k_and_cover_every_row_once(n, k):
    slices = minibatch_slices(n, k)
    assert len(slices) == k
    rows = np.concatenate([np.arange(n)[s] for s in slices])
    assert np.array_equal(rows, np.arange(n))
    if n >= k * k:  # the single-process sizes: ceil(n / k) rows each
        assert all(s.stop - s.start == -(-n // k) for s in slices[:-1])


# --- devices -------------------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_asked_for_without_cuda_is_one_line_and_exit_2(tmp_path, capsys, device):
    with pytest.raises(SystemExit) as e:
        main(["--config", str(ROOT / "configs/smoke.yaml"), f"device={device}", f"save_dir={tmp_path}"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"device {device!r}" in err[0] and "no CUDA device" in err[0]
    assert not any(tmp_path.iterdir())


def test_device_names_and_amp_are_checked():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="'device' is 'gpu'"):
        Args.from_dict({"device": "gpu"})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="amp: true needs a CUDA device"):
            train(Args.from_dict({"amp": True, "device": "cpu"}))


def test_a_step_crosses_to_the_device_in_one_packed_array_and_comes_back_whole():
    rng = np.random.default_rng(0)
    obs = rng.random((5, 7)).astype(np.float32)
    mask = rng.random((5, 3)) < 0.5
    state = rng.random((5, 4)).astype(np.float32)
    o, m, none, s = packed_transfer(torch.device("cpu"), obs, mask, None, state)
    assert none is None and m.dtype == torch.bool and o.dtype == s.dtype == torch.float32
    assert np.array_equal(o.numpy(), obs) and np.array_equal(m.numpy(), mask) and np.array_equal(s.numpy(), state)


def test_masked_logits_stay_float32_under_bfloat16_autocast_and_gradients_stay_finite():
    """amp: true runs the network in bfloat16; the mask must not turn into -inf (NaN entropy gradients)."""
    from agents.players.network import masked_logp_entropy

    spec = make_spec("partita")
    net = ActorCritic(spec.obs_size, spec.num_actions, [32])
    g = spec.new_game(3)
    obs = torch.from_numpy(np.stack([g.observation(g.current)] * 4))
    mask = torch.from_numpy(np.stack([g.legal_mask()] * 4))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the same autocast the trainer uses on CUDA
        logits, v = net(obs, mask)
    assert logits.dtype == torch.float32 and torch.isfinite(logits).all()
    logp, ent = masked_logp_entropy(logits, mask, logits.argmax(-1))
    (logp.mean() + 0.01 * ent.mean() + v.float().mean()).backward()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters())
