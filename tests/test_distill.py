"""Distilling a teacher's decisions into a network (agents/distill.py): it learns the labelled decisions,
keeps the others close, writes a loadable policy file that records how it was made, is seeded, and
refuses bad requests with a clear ValueError."""
from __future__ import annotations

import numpy as np
import pytest

from agents.distill import collect_positions, confident_change, distill, main
from agents.policy import load_checkpoint
from agents.registry import load_policy
from agents.rollout import make_spec
from tarot_env.rules.ottocento import A_MONTE, PLAY_ON


def test_OTT_3_distilled_a_monte_follows_the_teacher_and_the_rest_stays(tmp_path):
    """OTT-3 (a monte): taught by the heuristic (a monte only with a worthless first packet), the network
    answers as it does on the labelled positions, its other decisions barely move (KL on the anchors),
    and the file loads as a policy whose meta records the teacher, the phases and what was measured."""
    out = tmp_path / "d.pt"
    report = distill("ppo", "ottocento", "heuristic", ["A_MONTE"], games=8, seed=3, out=str(out), steps=200)
    assert report["labelled"] >= 8 and report["anchors"] > 100
    assert set(report["teacher_actions"]) <= {A_MONTE, PLAY_ON}
    assert report["agreement_after"] >= max(report["agreement_before"], 0.9)
    assert report["ce_after"] < report["ce_before"] and report["kl_after"] < 0.05
    meta = load_checkpoint(out, "ottocento")["meta"]
    assert meta["distilled"]["teacher"] == "heuristic" and meta["distilled"]["phases"] == ["A_MONTE"]
    assert meta["distilled"]["labelled"] == report["labelled"]
    student = load_policy(str(out), "ottocento")
    pos = collect_positions(make_spec("ottocento"), student, load_policy("heuristic", "ottocento"), ["A_MONTE"],
                            games=8, seed=3)
    assert pos.agreement >= 0.9  # the new network, on the positions it now meets, answers as the teacher
    again = tmp_path / "again.pt"
    distill("ppo", "ottocento", "heuristic", ["A_MONTE"], games=8, seed=3, out=str(again), steps=200)
    a, b = load_checkpoint(out)["model"], load_checkpoint(again)["model"]
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)  # one seed, one file


@pytest.mark.parametrize("kwargs,match", [
    (dict(phases=["BIDDING"]), "phases"),
    (dict(phases=[]), "phases"),
    (dict(games=0), "games must be at least 1"),
    (dict(min_z=2.0), "min_z needs a search teacher"),
    (dict(teacher_spec="pimc:worlds=4", min_z=-1.0), "min_z must be a finite number"),
    (dict(teacher_spec="pimc:worlds=4", min_z=float("nan")), "min_z must be a finite number"),
    (dict(teacher_spec="pimc:worlds=4", min_z=True), "min_z must be a finite number"),
    (dict(teacher_spec="pimc:worlds=4", min_z=float("inf")), "min_z must be a finite number"),
])
def test_bad_distill_requests_raise_value_error(tmp_path, kwargs, match):
    args = dict(student_spec="ppo", game="ottocento", teacher_spec="heuristic", phases=["A_MONTE"], games=2, seed=0,
                out=str(tmp_path / "x.pt"))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        distill(**args)
    assert not (tmp_path / "x.pt").exists()  # nothing written


def test_distill_cli_names_a_non_network_student(tmp_path, capsys):
    assert main(["heuristic", "--game", "millone", "--phases", "PLAY", "--out", str(tmp_path / "x.pt")]) == 2
    assert "must be a network" in capsys.readouterr().err


def test_confident_change_is_a_paired_test_on_the_searchs_worlds():
    """The search changes the student's action only when its best action's per-world advantage (the same
    worlds for both: paired) is at least ``min_z`` standard errors above zero."""
    per_world = np.array([[10.0, 8.0, 10.0], [12.0, 10.0, 0.0], [11.0, 9.0, 20.0], [9.0, 7.5, 11.0]])
    search = {"actions": [4, 7, 9], "values": per_world.mean(axis=0).tolist(), "per_world": per_world}
    assert not confident_change(search, 4, 2.0)          # the student already plays the search's choice
    assert confident_change(search, 7, 2.0)              # always 1.5-2 points worse: sure
    assert not confident_change(search, 9, 2.0)          # worse on average, but as often better: not sure
    assert confident_change(search, 9, 0.0)              # min_z = 0: any worse mean
    assert confident_change(search, 30, 2.0)             # outside the searched candidates (a prior's top_k)
    assert not confident_change({"actions": [4], "values": [0.0], "worlds": 0}, 4, 2.0)  # nothing searched


def test_distill_with_min_z_labels_only_the_searchs_confident_changes(tmp_path):
    """With ``min_z`` every labelled position is one where the search overrules the student (so none agreed
    before), the others of those phases are anchors, and the file records ``min_z``."""
    spec = make_spec("partita")
    student = load_policy("ppo", "partita")
    teacher = load_policy("pimc:worlds=8,rollout=random", "partita", seed=5)
    all_pos = collect_positions(spec, student, load_policy("pimc:worlds=8,rollout=random", "partita", seed=5),
                                ["PLAY"], games=2, seed=5)
    pos = collect_positions(spec, student, teacher, ["PLAY"], games=2, seed=5, min_z=1.0)
    assert 0 < len(pos.target) < len(all_pos.target)
    assert pos.agreement == 0.0 and (pos.target != pos.student).all()
    assert len(pos.anchor_obs) > len(all_pos.anchor_obs)  # the unconfident decisions are kept as they were
    out = tmp_path / "z.pt"
    report = distill("ppo", "partita", "pimc:worlds=8,rollout=random", ["PLAY"], games=2, seed=5, out=str(out),
                     steps=50, min_z=1.0)
    assert report["labelled"] == len(pos.target) and report["agreement_before"] == 0.0
    assert load_checkpoint(out, "partita")["meta"]["distilled"]["min_z"] == 1.0
