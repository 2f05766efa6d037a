"""Distilling a teacher's decisions into a network (agents/distill.py): it learns the labelled decisions,
keeps the others close, writes a loadable policy file that records how it was made, is seeded, and
refuses bad requests with a clear ValueError."""
from __future__ import annotations

import numpy as np
import pytest

from agents.distill import collect_positions, distill, main
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
