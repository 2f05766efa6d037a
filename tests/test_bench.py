"""``tarot-bench`` (agents/bench/): every subcommand's ``--help``, a run of each at a tiny size, and the
argparse errors. The sizes here measure nothing: they check that each subcommand runs end to end and
writes what it promises (the figures are in docs/benchmarks.md and the pages it links)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.bench import SUBCOMMANDS, build_parser, main
from agents.bench._common import HelpFormatter

ROOT = Path(__file__).resolve().parent.parent

FAKE_PEERS = """
import argparse, json
ap = argparse.ArgumentParser()
ap.add_argument("--only", default="")
ap.add_argument("--scale", type=float)
ap.add_argument("--reps", type=int)
ap.add_argument("--json")
a = ap.parse_args()
rows = [{"key": k, "env": "fake", "decisions_per_s": 1000.0, "cpu_decisions_per_s": 500.0}
        for k in (a.only.split(",") if a.only else ["fake_peer"])]
json.dump({"rows": rows}, open(a.json, "w"))
"""


@pytest.fixture
def fake_peers(tmp_path, monkeypatch):
    """A ``../shared/bench/peers.py`` that reports every peer at 1,000 decisions/s (500 per CPU second)."""
    (tmp_path / "shared" / "bench").mkdir(parents=True)
    (tmp_path / "shared" / "bench" / "peers.py").write_text(FAKE_PEERS)
    monkeypatch.setenv("TAROCCHINI_SHARED", str(tmp_path / "shared"))
    monkeypatch.setenv("TAROCCHINI_PEERS_PYTHON", sys.executable)


def test_console_script_is_declared():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["tarot-bench"] == "agents.bench:main"


def test_help_lists_the_subcommands_without_loading_numpy_numba_torch_or_the_engines():
    code = ("import sys\nfrom agents.bench import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "for sub in " + repr(list(SUBCOMMANDS)) + ":\n"
            "    try:\n        main([sub, '--help'])\n    except SystemExit as e:\n        assert e.code == 0\n"
            "print(sorted(m for m in ('numpy', 'numba', 'torch', 'tarot_env', 'pettingzoo') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
    for sub in SUBCOMMANDS:
        assert sub in r.stdout


@pytest.mark.parametrize("sub", list(SUBCOMMANDS))
def test_subcommand_help_lists_every_option_with_its_default(sub, capsys):
    with pytest.raises(SystemExit) as e:
        main([sub, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    parser = build_parser()._subparsers._group_actions[0].choices[sub]
    fmt = HelpFormatter(sub)
    for action in parser._actions:
        if action.dest == "help":
            continue
        assert (action.option_strings[0] if action.option_strings else action.metavar or action.dest) in out
        if action.option_strings:
            assert "default" in fmt._get_help_string(action), f"{sub} {action.option_strings[0]}: no default shown"


@pytest.mark.parametrize("argv, message", [
    (["nope"], "invalid choice"),
    ([], "required"),
    (["env", "--seconds", "x"], "expected a number"),
    (["env", "--reps", "0"], "integer >= 1"),
    (["env", "--games", "chess", "--no-peers"], "unknown game(s) chess"),
    (["batched", "--batch-sizes", "8,x"], "comma-separated integers"),
    (["batched", "--engines", "warp", "--no-peers"], "unknown engine(s) warp"),
    (["search", "sideways"], "invalid choice"),
    (["search", "decisions", "--engine", "gpu"], "unknown engine(s) gpu"),
    (["search", "strength", "--deals", "1"], "at least 2"),
    (["ab"], "give a git revision"),
    (["ab", "no-such-revision-0xdead"], "is not a git revision"),
    (["ab", "--self-check", "--pairs", "0"], "must be >= 1"),
    (["first-run", "--paths", "gpu"], "unknown path 'gpu'"),
    (["train", "--rows", "2y1"], "RANKSxTHREADS"),
    (["train", "--deals", "5"], "only with --strength"),
    (["train", "--config", "configs/no_such.yaml"], "no such file"),
])
def test_bad_arguments_give_an_argparse_error(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "usage: tarot-bench" in err and message in err


def test_env_reports_ratios_to_the_peers_of_the_same_run(tmp_path, fake_peers, capsys):
    out = tmp_path / "env.json"
    main(["env", "--games", "partita", "--seconds", "0.2", "--reps", "1", "--peers", "a,b", "--json", str(out)])
    d = json.loads(out.read_text())
    assert {"machine", "ours", "ours_median_decisions_per_s", "peers_median_decisions_per_s", "ratios"} <= set(d)
    ours = d["ours_median_decisions_per_s"]["partita"]
    assert ours > 0 and d["peers_median_decisions_per_s"] == {"a": 1000.0, "b": 1000.0}
    assert d["ratios"]["partita"]["a"] == pytest.approx(ours / 1000.0)
    assert "| tarocchini/partita-v1 |" in capsys.readouterr().out


def test_env_paired(tmp_path, fake_peers):
    out = tmp_path / "env.json"
    main(["env", "--games", "millone", "--seconds", "0.1", "--reps", "2", "--paired", "--peers", "a",
          "--json", str(out)])
    d = json.loads(out.read_text())
    assert len(d["peers_per_repeat"]) == 2 and len(d["paired_ratios"]["millone"]["a"]) == 2
    assert d["paired_ratios"]["millone"]["a"][0] == pytest.approx(d["ours"]["millone"][0]["decisions_per_s"] / 1000)


def test_batched_reports_paired_ratios_and_the_output_floor(tmp_path, fake_peers, capsys):
    out = tmp_path / "batched.json"
    main(["batched", "--games", "partita", "--batch-sizes", "8", "--seconds", "0.2", "--reps", "2",
          "--masks-only", "--sparse", "--json", str(out)])
    d = json.loads(out.read_text())
    assert set(d["runs"]) == {"partita@8", "partita/masks-only@8", "partita/sparse@8"}
    assert d["runs"]["partita/sparse@8"][0]["config"] == {"obs_format": "sparse"}
    assert {"medians", "peers", "copy_bandwidth_bytes_per_s", "floor_bytes_per_decision",
            "output_floor_decisions_per_s", "paired_ratios", "ratios"} <= set(d)
    assert set(d["ratios"]["partita@8"]) == {"os_tarok4_full", "os_hearts_obsnp"}
    assert len(d["paired_ratios"]["partita@8"]["os_tarok4_full"]) == 2
    assert set(d["output_floor_decisions_per_s"]) == {"partita@8"}
    assert "memory-traffic floor" in capsys.readouterr().out


@pytest.mark.parametrize("argv, keys", [
    (["worlds", "--n", "2", "--positions", "2"], {"worlds_per_s", "worlds_per_cpu_s", "rows_per_s", "rows_per_cpu_s",
                                                      "fallbacks"}),
    (["decisions", "--worlds", "2", "--decisions", "1", "--rollout", "random", "--engine", "vector,rules"],
     {"decisions_per_s", "decisions_per_cpu_s", "engine"}),
    (["strength", "--deals", "2", "--worlds", "2", "--rollout", "random", "--opponents", "random"],
     {"mean_margin", "ci95", "win_share"}),
])
def test_search(argv, keys, tmp_path):
    out = tmp_path / "search.json"
    main(["search", *argv, "--games", "partita", "--json", str(out)])
    d = json.loads(out.read_text())
    expected = {"worlds": ["partita"], "decisions": ["partita/vector", "partita/rules"],
                "strength": ["partita/random"]}[argv[0]]
    assert list(d) == expected
    for row in d.values():
        assert keys <= set(row)


def test_ab_self_check(tmp_path, capsys):
    out = tmp_path / "ab.json"
    main(["ab", "--self-check", "--game", "partita", "--batch", "4", "--pairs", "1", "--warmup", "0", "--steps", "2",
          "--json", str(out)])
    d = json.loads(out.read_text())
    assert d["against"] == "itself" and len(d["ratios"]) == 1 and d["median_ratio"] > 0
    assert "paired ratio median" in capsys.readouterr().out


def test_first_run(tmp_path, capsys):
    out = tmp_path / "first.json"
    main(["first-run", "--games", "partita", "--paths", "aec", "--more-steps", "0", "--json", str(out)])
    d = json.loads(out.read_text())
    r = d["results"]["partita/aec"]
    assert "error" not in r, r
    assert set(r["cold"]) == {"import", "make", "reset", "step", "total", "more", "process"}
    assert r["cache_entries"] >= 1
    assert "| partita |" in capsys.readouterr().out


def test_train_throughput(tmp_path, capsys):
    out = tmp_path / "train.json"
    main(["train", "--config", "configs/smoke.yaml", "--updates", "1", "--warmup", "0", "--rows", "1x1",
          "--json", str(out)])
    d = json.loads(out.read_text())
    (row,) = d["rows"]
    assert (row["ranks"], row["threads"], row["device"]) == (1, 1, "cpu")
    assert row["decisions_per_s"] > 0 and row["ratio"] == 1.0 and row["updates"] == 1
    text = capsys.readouterr().out
    assert "| 1 | 1 | cpu |" in text and "Command: `tarot-bench train --config configs/smoke.yaml" in text


def test_train_strength_writes_the_table_and_the_curves(tmp_path, capsys):
    main(["train", "--strength", "--games", "partita", "--deals", "2", "--out", str(tmp_path / "docs"),
          "num_envs=8", "num_steps=32", "total_decisions=256", "hidden=[16]", "num_minibatches=1", "update_epochs=1",
          "eval_every=0", "checkpoint_every=0", "progress=false", f"log_dir={tmp_path}/runs",
          f"save_dir={tmp_path}/ck", "overwrite=true", "threads=1", "time_limit_s=0"])
    table = (tmp_path / "docs" / "ppo_benchmark.md").read_text()
    assert table.startswith("| game | training (min) |") and "| partita |" in table
    assert (tmp_path / "docs" / "ppo_learning_curves.png").stat().st_size > 0


def test_compile_names_a_kernel_compiled_for_a_literal_and_a_variable(tmp_path, monkeypatch):
    """``tarot-bench compile``'s report: numba compiles a kernel called with a literal constant inside another
    kernel apart from the same kernel called with a variable; the report finds it and says which argument."""
    from agents.bench import compile as bench_compile

    (tmp_path / "toy_kernels.py").write_text(
        "import numpy as np\nfrom numba import njit\n\n"
        "@njit\ndef add(x, y):\n    return x + y\n\n"
        "@njit\ndef with_literal(x):\n    return add(x, 0)\n\n"
        "@njit\ndef with_int64(x):\n    return add(x, np.int64(0))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_kernels

    toy_kernels.with_int64(3)
    assert bench_compile.repeated_kernels(("toy_kernels",)) == {}  # one signature so far
    toy_kernels.with_literal(3)
    found = bench_compile.repeated_kernels(("toy_kernels",))
    assert list(found) == ["toy_kernels.add"]
    assert bench_compile.differing(found["toy_kernels.add"]) == ["arg 1: int64 | Literal[int](0)"]
