"""``tarot-train`` as a user runs it (issue #35, items 4-6): ``--resume [PATH]`` writes only where the command
line says, a run started again does not double its curves, the tags name the phases one way, the summary names
the file the README evaluates, a size that cannot fit is refused up front, a damaged checkpoint is told in
plain words."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from agents.players.policy import load_checkpoint
from agents.training.ppo import Args, load_config, main, run_paths, train
from tests.test_ppo import TINY

ROOT = Path(__file__).resolve().parent.parent


def _overrides(**kw) -> list[str]:
    return [f"{k}={json.dumps(v)}" for k, v in {**TINY, **kw}.items()]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """A run stopped after its first update (its checkpoint ``last.pt`` and logs), under ``root``."""
    root = tmp_path_factory.mktemp("run")
    train(Args.from_dict({**TINY, "log_dir": str(root / "runs"), "save_dir": str(root / "ck")}), stop_after_updates=1)
    return root


def _copy(stopped_run: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """The stopped run's folders copied under ``tmp_path`` (its checkpoint keeps naming the original's folders),
    and the original's files, to check that nothing there changes."""
    original = dict(log_dir=str(stopped_run / "runs"), save_dir=str(stopped_run / "ck"))
    shutil.copytree(stopped_run, tmp_path / "copy")
    return tmp_path / "copy", _files(stopped_run) | {"args": json.dumps(original).encode()}


def test_resume_with_a_path_writes_where_the_command_line_says(stopped_run, tmp_path, capsys):
    copy, before = _copy(stopped_run, tmp_path)
    src = copy / "ck" / "partita_s3" / "last.pt"
    res = main(["--resume", str(src), *_overrides(log_dir=str(tmp_path / "logs"), save_dir=str(tmp_path / "out"))])
    assert res["step"] == TINY["total_decisions"]
    assert (tmp_path / "out" / "partita_s3" / "final.pt").is_file()
    assert (tmp_path / "logs" / "partita_s3" / "progress.csv").is_file()
    assert f"writing checkpoints to '{tmp_path / 'out' / 'partita_s3'}'" in capsys.readouterr().out
    assert _files(stopped_run) == {k: v for k, v in before.items() if k != "args"}  # the original: untouched


def test_resuming_a_copied_run_never_writes_into_the_original_run(stopped_run, tmp_path, capsys):
    copy, before = _copy(stopped_run, tmp_path)
    original_logs = json.loads(before["args"])["log_dir"]
    # the copy's checkpoint folder on the command line, the logs left where the config says: the original's
    args = _overrides(save_dir=str(copy / "ck"), log_dir=original_logs)
    with pytest.raises(SystemExit) as e:
        main(["--resume", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "is a copy of the run in" in err and "would write into that run's folders" in err
    assert original_logs in err
    main(["--resume", *_overrides(save_dir=str(copy / "ck"), log_dir=str(copy / "runs"))])  # its own folders
    assert load_checkpoint(copy / "ck" / "partita_s3" / "last.pt")["meta"]["step"] == TINY["total_decisions"]
    assert _files(stopped_run) == {k: v for k, v in before.items() if k != "args"}


def test_resume_refuses_to_write_over_another_runs_checkpoint(stopped_run, tmp_path, capsys):
    copy, _ = _copy(stopped_run, tmp_path)
    other = tmp_path / "other" / "partita_s3"
    other.mkdir(parents=True)
    shutil.copy(copy / "ck" / "partita_s3" / "last.pt", other / "last.pt")
    mark = (other / "last.pt").read_bytes()
    with pytest.raises(SystemExit):
        main(["--resume", str(copy / "ck" / "partita_s3"),
              *_overrides(save_dir=str(tmp_path / "other"), log_dir=str(tmp_path / "l"))])
    assert "holds another run's checkpoint" in capsys.readouterr().err
    assert (other / "last.pt").read_bytes() == mark


def test_numpy_scalars_are_taken_as_config_values():
    import numpy as np

    a = Args.from_dict({**TINY, "seed": np.int64(4), "amp": np.bool_(False), "learning_rate": np.float32(0.5)})
    assert (type(a.seed), type(a.amp), type(a.learning_rate)) == (int, bool, float)
    assert a == Args.from_dict({**TINY, "seed": 4, "amp": False, "learning_rate": float(np.float32(0.5))})


def test_an_override_may_follow_a_bare_resume():
    from agents.parsers import parse_train

    ns = parse_train(["--config", "configs/smoke.yaml", "--resume", "seed=3"])
    assert ns.resume == "" and ns.overrides == ["seed=3"]
    assert parse_train(["--resume", "x/last.pt"]).resume == "x/last.pt"
    assert parse_train([]).resume is None


def test_a_run_started_again_replaces_its_curves_and_tags_every_phase_by_name(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    args = _overrides(log_dir=str(tmp_path / "runs"), save_dir=str(tmp_path / "ck"), overwrite=True)
    first = main(args)
    main(args)  # the smoke config's case: overwrite=true, run twice
    logs = tmp_path / "runs" / "partita_s3"
    assert len(list(logs.glob("events.out.tfevents.*"))) == 1
    ea = EventAccumulator(str(logs)).Reload()
    assert len(ea.Scalars("losses/policy")) == first["update"]  # one curve, not two
    phases = {t.split("/")[1] for t in ea.Tags()["scalars"] if t.startswith("phase/")}
    assert {"DISCARD", "PLAY"} <= phases and not any(p.isdigit() for p in phases)
    assert "phase/PLAY/entropy" in ea.Tags()["scalars"]


def test_the_summary_names_final_pt_as_the_readme_does_and_says_a_short_run_is_expected_to_lose(tmp_path, capsys):
    main(_overrides(log_dir=str(tmp_path / "runs"), save_dir=str(tmp_path / "ck")))
    out = capsys.readouterr().out
    summary = json.loads(out[out.index("{"):])
    assert summary["final_checkpoint"] == str(tmp_path / "ck" / "partita_s3" / "final.pt")
    assert Path(summary["final_checkpoint"]).is_file()
    assert "a margin below 0 against random play is expected" in summary["note"]
    smoke_final = run_paths(load_config(ROOT / "configs" / "smoke.yaml"))[1] / "final.pt"
    readme = (ROOT / "README.md").read_text()
    assert f"python -m agents.evaluation.evaluate {smoke_final}" in readme or f"tarot-eval {smoke_final}" in readme
    assert "last.pt" not in readme.split("## After the smoke run")[1].split("```")[1]
    assert "expected to lose" in readme


@pytest.mark.skipif(not Path("/proc/meminfo").is_file(), reason="this machine does not tell its memory")
def test_a_rollout_that_cannot_fit_in_memory_is_refused_before_anything_is_allocated(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(_overrides(log_dir=str(tmp_path / "runs"), save_dir=str(tmp_path / "ck"), num_envs=100_000_000))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "a rollout of num_envs=100,000,000 x num_steps=16 needs at least" in err and "lower num_envs" in err
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("content", [b"not a checkpoint\n", b"", "half"], ids=["text", "empty", "cut-short"])
def test_a_damaged_checkpoint_is_told_in_plain_words(tmp_path, content):
    path = tmp_path / "bad.pt"
    if content == "half":
        good = (ROOT / "agents" / "pretrained" / "partita.pt").read_bytes()
        content = good[: len(good) // 2]
    path.write_bytes(content)
    with pytest.raises(ValueError) as e:
        load_checkpoint(path)
    msg = str(e.value)
    assert msg.startswith(f"corrupt checkpoint {str(path)!r}: it is not a checkpoint file")
    assert "Unpickling" not in msg and "weights_only" not in msg.replace("weights and plain", "")


def test_a_checkpoint_holding_other_objects_is_told_in_plain_words(tmp_path):
    path = tmp_path / "objects.pt"
    torch.save({"x": _Opaque()}, path)
    with pytest.raises(ValueError) as e:
        load_checkpoint(path)
    assert "holds Python objects other than tensors and plain data, which are never loaded" in str(e.value)
    assert "Unpickling" not in str(e.value)


class _Opaque:
    """An object a weights-only load refuses."""
