"""Distilling a teacher's decisions into a network (agents/training/distill.py): it learns the labelled decisions,
keeps the others close, writes a loadable policy file that records how it was made, is seeded, and
refuses bad requests with a clear ValueError."""
from __future__ import annotations

import numpy as np
import pytest

from agents.players.policy import load_checkpoint
from agents.players.registry import load_policy
from agents.spec import make_spec
from agents.training.distill import collect_positions, confident_change, distill, main
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
    (dict(anchor_games=-1), "anchor_games must be a whole number"),
    (dict(anchor_games=True), "anchor_games must be a whole number"),
    (dict(batch=0), "batch must be a whole number"),
    (dict(batch=2.5), "batch must be a whole number"),
    (dict(out=None), "name a policy file to write"),
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


class _Recorder:
    """A player that plays each game's first legal action and records (game tag, team of the seat asked)."""

    needs_game = True

    def __init__(self, team_of):
        self.team_of, self.asked = team_of, []

    def act_games(self, games):
        self.asked += [(g.tag, int(self.team_of[g.current])) for g in games]
        return np.array([int(np.flatnonzero(g.legal_mask())[0]) for g in games])


def test_with_an_opponent_the_student_holds_one_team_and_only_its_decisions_become_positions():
    """``opponent``: the student holds team 0 in the even-numbered deals and team 1 in the odd ones; the
    opponent is asked only at the other team's seats, the teacher only at the student's own."""
    spec = make_spec("partita")
    tags = iter(range(100))
    new_game = spec.new_game

    def tagged(seed):
        g = new_game(seed)
        g.tag = next(tags)  # survives clone(), so the teacher's copy carries it too
        return g

    spec.new_game = tagged
    teacher, opponent = _Recorder(spec.team_of), _Recorder(spec.team_of)
    pos = collect_positions(spec, load_policy("ppo", "partita"), teacher, ["PLAY"], games=4, seed=2, opponent=opponent)
    assert teacher.asked and opponent.asked
    assert all(team == tag % 2 for tag, team in teacher.asked)        # the student's team only
    assert all(team != tag % 2 for tag, team in opponent.asked)       # the other team only
    assert {tag for tag, _ in teacher.asked} == {0, 1, 2, 3} == {tag for tag, _ in opponent.asked}
    assert len(pos.target) == len(teacher.asked)  # every labelled position is one the teacher decided


def test_saved_positions_fit_to_the_same_file_as_collected_ones_and_files_join(tmp_path):
    """``positions_out`` writes step 1's positions; fitting them later (``positions_in``) gives the very
    file that fitting them at once gives, and two files are fitted together."""
    args = dict(student_spec="ppo", game="millone", teacher_spec="heuristic", phases=["DISCARD", "SECOND_DISCARD"],
                games=3, seed=4, steps=20)
    direct = tmp_path / "direct.pt"
    r1 = distill(**args, out=str(direct), positions_out=str(tmp_path / "a.npz"))
    later = tmp_path / "later.pt"
    r2 = distill(**{**args, "teacher_spec": "?", "phases": []}, out=str(later), positions_in=[str(tmp_path / "a.npz")])
    a, b = load_checkpoint(direct)["model"], load_checkpoint(later)["model"]
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert r2["labelled"] == r1["labelled"] and r2["ce_after"] == r1["ce_after"]
    meta = load_checkpoint(later, "millone")["meta"]["distilled"]
    assert meta["teacher"] == "heuristic" and meta["phases"] == ["DISCARD", "SECOND_DISCARD"]
    only = distill(**{**args, "seed": 5}, out=None, positions_out=str(tmp_path / "b.npz"))  # collect only
    assert "ce_after" not in only
    both = distill(**args, out=str(tmp_path / "both.pt"), positions_in=[str(tmp_path / "a.npz"),
                                                                        str(tmp_path / "b.npz")])
    assert both["labelled"] == r1["labelled"] + only["labelled"]
    assert load_checkpoint(tmp_path / "both.pt", "millone")["meta"]["distilled"]["games"] == 6


def _tampered(src, dst, **changes):
    with np.load(src, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data.update(changes)
    data = {k: v for k, v in data.items() if v is not None}
    with open(dst, "wb") as f:
        np.savez(f, **data)
    return str(dst)


def test_positions_files_are_checked_whole_before_use(tmp_path):
    """A positions file of another game, another student, a broken or changed content is refused with what
    is wrong, and nothing is written."""
    from agents.players.policy import model_checksum
    from agents.training.distill import load_positions

    src = tmp_path / "p.npz"
    distill("ppo", "millone", "heuristic", ["DISCARD"], games=2, seed=1, out=None, positions_out=str(src))
    spec = make_spec("millone")
    good = model_checksum(load_policy("ppo", "millone").model.state_dict())
    pos, headers = load_positions([str(src)], spec, good)
    assert len(pos.target) > 0 and headers[0]["teacher"] == "heuristic"
    with np.load(src, allow_pickle=False) as z:
        target, header = z["target"].copy(), str(z["header"][()])
    bad_target = target.copy()
    bad_target[0] = 64  # the last action id, not legal in a discard position
    cases = [
        (_tampered(src, tmp_path / "t.npz", target=bad_target), "outside its position's legal mask"),
        (_tampered(src, tmp_path / "n.npz", target=target[:-1]), "disagree on the number"),
        (_tampered(src, tmp_path / "d.npz", target=target.astype(np.float64)), "array 'target' is float64"),
        (_tampered(src, tmp_path / "k.npz", anchor_probs=None), "not a positions file"),
        (_tampered(src, tmp_path / "o.npz", extra=np.array([{"x": 1}], dtype=object)), "not a positions file"),
        (_tampered(src, tmp_path / "h.npz", header=np.array(header.replace('"format": 1', '"format": 9'))), "format 9"),
        (_tampered(src, tmp_path / "g.npz", header=np.array(header.replace("millone-v2", "millone-v1"))),
         "not of 'tarocchini/millone-v2'"),
        (str(tmp_path / "missing.npz"), "not a positions file"),
    ]
    for path, match in cases:
        with pytest.raises(ValueError, match=match):
            load_positions([path], spec, good)
    with pytest.raises(ValueError, match="another network"):
        load_positions([str(src)], spec, "0" * 64)
    with pytest.raises(ValueError, match="not of 'tarocchini/ottocento"):
        distill("ppo", "ottocento", "?", [], games=0, seed=0, out=str(tmp_path / "x.pt"), positions_in=[str(src)])
    assert not (tmp_path / "x.pt").exists()


def test_distill_cli_positions_exclude_collection_options(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["ppo", "--game", "millone", "--positions", "p.npz", "--phases", "PLAY", "--out", str(tmp_path / "x.pt")])
    assert "--positions fits saved positions" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["ppo", "--game", "millone", "--out", str(tmp_path / "x.pt")])
    assert "--phases is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["ppo", "--game", "millone", "--phases", "PLAY", "--threads", "0", "--out", str(tmp_path / "x.pt")])
    assert "--threads must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "x.pt").exists()


def test_cheap_anchors_and_minibatches_keep_the_rest_of_the_play(tmp_path):
    """``anchor_games``: the student's own play of extra deals (each decision with a choice, its
    probabilities as they were) joins the anchors; ``batch`` fits in seeded minibatches, still learns the
    labelled decisions, and one seed gives one file."""
    from agents.training.distill import student_anchors

    spec = make_spec("millone")
    student = load_policy("ppo", "millone")
    obs, mask, probs = student_anchors(spec, student, games=3, seed=2)
    assert len(obs) > 50 and (mask.sum(1) > 1).all()
    assert np.allclose(probs, student.probs(obs, mask), atol=1e-6)
    args = dict(student_spec="ppo", game="millone", teacher_spec="heuristic", phases=["DISCARD"], games=4, seed=2,
                steps=60, batch=16)
    plain = distill(**args, out=str(tmp_path / "plain.pt"))
    more = distill(**args, out=str(tmp_path / "more.pt"), anchor_games=3)
    assert more["anchors"] == plain["anchors"] + len(obs)
    assert more["agreement_after"] > more["agreement_before"] and more["ce_after"] < more["ce_before"]
    again = distill(**args, out=str(tmp_path / "again.pt"), anchor_games=3)
    assert {k: v for k, v in again.items() if k != "positions_seconds"} == \
        {k: v for k, v in more.items() if k != "positions_seconds"}
    a, b = load_checkpoint(tmp_path / "more.pt")["model"], load_checkpoint(tmp_path / "again.pt")["model"]
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert load_checkpoint(tmp_path / "more.pt", "millone")["meta"]["distilled"]["anchor_games"] == 3
