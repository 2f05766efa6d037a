"""Distilling a search player's decisions into a policy network: one step of expert iteration.

A trained network can be weak at a decision kind that its training signal hardly reaches (issue #12:
the Ottocento network said *a monte*, OTT-3, at about 80% of the times it was asked, which nothing in
its training punished and which cost it deals against random play). This module teaches the network,
**alone** (no search at play time), what a teacher (a search, the heuristic, another network) chooses
at the decisions of chosen phases, and keeps the rest of its play as it was:

1. **Positions.** The student network (greedy) plays ``games`` seeded first deals at every seat. Each
   decision of one of ``phases`` with more than one legal action is a *labelled* position: the teacher
   (any player spec, e.g. ``pimc:worlds=64,rollout=random``) decides on a copy of the game, and the
   position keeps the student's observation, mask and the teacher's action. Every other decision is an
   *anchor*: its observation, mask and the student's own probabilities there. The student's own
   actions drive the games (the positions are those it meets, as in DAgger). With ``min_z`` (a search
   teacher) a decision is labelled only where the search is that many standard errors sure that its
   action beats the student's (:func:`confident_change`); the others are anchors.
2. **Fine-tune.** The actor minimises the cross-entropy of the teacher's actions on the labelled
   positions plus ``kl_coef`` times the KL divergence from the student before to the student now on
   the anchors (full batches, Adam, ``steps`` steps). The critic is not touched.
3. **Write** a policy file in the shipped format (metadata + weights, whole-content checksum), its meta
   recording the teacher, phases, positions and seed (``meta["distilled"]``).

Everything is seeded: the same arguments give the same file. From the command line::

    python -m agents.distill ppo --game ottocento --teacher "pimc:worlds=64,rollout=random" \\
        --phases A_MONTE --games 600 --seed 0 --out ottocento_distilled.pt
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .policy import NetworkPolicy, Policy, save_checkpoint
from .rollout import GameSpec, make_spec


@dataclass
class Positions:
    """The positions of step 1: labelled (teacher's action) and anchors (student's probabilities)."""

    obs: np.ndarray          # float32[L, obs]
    mask: np.ndarray         # bool[L, actions]
    target: np.ndarray       # int64[L]: the teacher's action
    student: np.ndarray      # int64[L]: the student's own (greedy) action there
    anchor_obs: np.ndarray   # float32[K, obs]
    anchor_mask: np.ndarray  # bool[K, actions]
    anchor_probs: np.ndarray  # float32[K, actions]

    @property
    def agreement(self) -> float:
        """Share of labelled positions where the student already chose the teacher's action."""
        return float((self.target == self.student).mean()) if len(self.target) else float("nan")


def phase_names(spec: GameSpec) -> list[str]:
    return [p.name for p in spec.Game.Phase]


def confident_change(search: dict, student_action: int, min_z: float) -> bool:
    """Whether a search (a PIMC player's ``last``: each searched action's rollout value in each sampled
    world) is sure that its best action beats ``student_action``: the mean of the per-world differences
    (the same worlds for every action: a paired comparison) is at least ``min_z`` standard errors above
    zero. An action the search did not consider (outside a prior's ``top_k``) counts as beaten."""
    acts = list(search["actions"])
    best = int(np.argmax(search["values"]))
    if acts[best] == student_action or "per_world" not in search:
        return False
    if student_action not in acts:
        return True
    d = search["per_world"][:, best] - search["per_world"][:, acts.index(student_action)]
    if len(d) < 2:
        return False
    se = float(d.std(ddof=1)) / np.sqrt(len(d))
    return float(d.mean()) > 0 and (se == 0 or float(d.mean()) >= min_z * se)


def collect_positions(spec: GameSpec, student: NetworkPolicy, teacher: Policy, phases: list[str], games: int,
                      seed: int, max_anchors: int = 20000, min_z: float | None = None) -> Positions:
    """Step 1 (module docstring): ``games`` first deals, dealt from ``seed``, played by the student.

    With ``min_z`` (a search teacher only) a decision of ``phases`` is labelled only where the search is
    confident that the student's own action is worse (:func:`confident_change`), and is an anchor
    otherwise: the student changes only where the search is sure, and keeps the rest of its play."""
    known = phase_names(spec)
    bad = [p for p in phases if p not in known]
    if bad or not phases:
        raise ValueError(f"phases {bad or phases!r}: name one or more of {spec.name}'s phases {known}")
    if games < 1:
        raise ValueError(f"games must be at least 1 (got {games})")
    if min_z is not None and not hasattr(teacher, "evaluate"):
        raise ValueError(f"min_z needs a search teacher (pimc or ppo+pimc: it compares the search's values), "
                         f"not {getattr(teacher, 'name', type(teacher).__name__)!r}")
    if min_z is not None and (isinstance(min_z, bool) or not isinstance(min_z, (int, float))
                              or not (np.isfinite(min_z) and min_z >= 0)):
        raise ValueError(f"min_z must be a finite number ≥ 0 (got {min_z!r})")
    rng = np.random.default_rng(seed)
    seeds = [int(s) for s in rng.integers(2**62, size=games)]
    O, A = spec.obs_size, spec.num_actions
    lab_obs, lab_mask, lab_t, lab_s = [], [], [], []
    anc_obs, anc_mask = [], []
    live = [spec.new_game(s) for s in seeds]
    while live:
        obs = np.empty((len(live), O), dtype=np.float32)
        mask = np.empty((len(live), A), dtype=bool)
        for k, g in enumerate(live):
            g.observation(g.current, out=obs[k])
            mask[k] = g.legal_mask()
        acts = student.act_batch(obs, mask)
        for k, g in enumerate(live):
            if mask[k].sum() < 2:
                continue
            if g.phase.name in phases:
                t = (int(teacher.act_games([g.clone()])[0]) if getattr(teacher, "needs_game", False)
                     else int(teacher.act_batch(obs[k:k + 1], mask[k:k + 1])[0]))
                if min_z is None or confident_change(teacher.last, int(acts[k]), min_z):
                    lab_obs.append(obs[k].copy())
                    lab_mask.append(mask[k].copy())
                    lab_t.append(t)
                    lab_s.append(int(acts[k]))
                    continue
            anc_obs.append(obs[k].copy())
            anc_mask.append(mask[k].copy())
        for k, g in enumerate(live):
            g.apply_unchecked(int(acts[k]))
        live = [g for g in live if not g.history]  # first deals only
    if not lab_t:
        why = f" on which the search was {min_z} standard errors sure" if min_z is not None else ""
        raise ValueError(f"no decision of phases {phases} with a choice{why} came up in {games} deals")
    anc_obs_a = np.array(anc_obs, dtype=np.float32).reshape(-1, O)
    anc_mask_a = np.array(anc_mask, dtype=bool).reshape(-1, A)
    if len(anc_obs_a) > max_anchors:
        keep = np.sort(rng.choice(len(anc_obs_a), max_anchors, replace=False))
        anc_obs_a, anc_mask_a = anc_obs_a[keep], anc_mask_a[keep]
    probs = student.probs(anc_obs_a, anc_mask_a).astype(np.float32) if len(anc_obs_a) else \
        np.zeros((0, A), dtype=np.float32)
    return Positions(np.array(lab_obs, dtype=np.float32), np.array(lab_mask, dtype=bool),
                     np.array(lab_t, dtype=np.int64), np.array(lab_s, dtype=np.int64), anc_obs_a, anc_mask_a, probs)


def fine_tune(student: NetworkPolicy, pos: Positions, steps: int = 200, lr: float = 3e-4, kl_coef: float = 1.0,
              seed: int = 0) -> dict:
    """Step 2 (module docstring), in place on ``student.model``; returns the losses before and after."""
    torch.manual_seed(seed)
    model = student.model
    params = list(model.trunk.parameters()) + list(model.pi.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    obs, mask = torch.as_tensor(pos.obs), torch.as_tensor(pos.mask)
    target = torch.as_tensor(pos.target)
    a_obs, a_mask = torch.as_tensor(pos.anchor_obs), torch.as_tensor(pos.anchor_mask)
    a_logp_old = torch.log(torch.as_tensor(pos.anchor_probs).clamp_min(1e-12))
    a_p_old = torch.as_tensor(pos.anchor_probs)

    def losses() -> tuple[torch.Tensor, torch.Tensor]:
        ce = torch.nn.functional.cross_entropy(model.masked_logits(obs, mask), target)
        if len(a_obs):
            logp = torch.log_softmax(model.masked_logits(a_obs, a_mask), dim=1)
            kl = (a_p_old * (a_logp_old - logp)).masked_fill(~a_mask, 0.0).sum(1).mean()
        else:
            kl = torch.zeros(())
        return ce, kl

    model.train()
    with torch.no_grad():
        ce0, kl0 = losses()
    for _ in range(steps):
        ce, kl = losses()
        opt.zero_grad()
        (ce + kl_coef * kl).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        ce1, kl1 = losses()
        agree = float((model.masked_logits(obs, mask).argmax(1) == target).float().mean())
    return {"ce_before": float(ce0), "kl_before": float(kl0), "ce_after": float(ce1), "kl_after": float(kl1),
            "agreement_before": pos.agreement, "agreement_after": agree}


def distill(student_spec: str, game: str, teacher_spec: str, phases: list[str], games: int, seed: int, out: str,
            steps: int = 200, lr: float = 3e-4, kl_coef: float = 1.0, min_z: float | None = None) -> dict:
    """Steps 1–3 (module docstring); returns what it measured (also stored in the file's meta)."""
    from .registry import load_policy

    student = load_policy(student_spec, game)
    if not isinstance(student, NetworkPolicy):
        raise ValueError(f"the student must be a network (a checkpoint or 'ppo'), not {student_spec!r}")
    teacher = load_policy(teacher_spec, game, seed=seed)
    spec = make_spec(game, student.meta.get("config", {}).get("game_options", {}))
    t0 = time.perf_counter()
    pos = collect_positions(spec, student, teacher, phases, games, seed, min_z=min_z)
    t1 = time.perf_counter()
    report = fine_tune(student, pos, steps=steps, lr=lr, kl_coef=kl_coef, seed=seed)
    report.update(labelled=len(pos.target), anchors=len(pos.anchor_obs), positions_seconds=round(t1 - t0, 1),
                  teacher_actions={int(a): int(n) for a, n in zip(*np.unique(pos.target, return_counts=True))},
                  student_actions={int(a): int(n) for a, n in zip(*np.unique(pos.student, return_counts=True))})
    meta = {k: v for k, v in student.meta.items() if k != "checksum"}
    meta["distilled"] = {"from": str(student_spec), "teacher": teacher_spec, "phases": list(phases), "games": games,
                         "seed": seed, "steps": steps, "lr": lr, "kl_coef": kl_coef, "min_z": min_z,
                         **{k: v for k, v in report.items() if not isinstance(v, dict)}}
    save_checkpoint(out, {"meta": meta, "model": student.model.state_dict()})
    return report


def main(argv: list[str] | None = None) -> int:
    import tarot_env

    p = argparse.ArgumentParser(prog="python -m agents.distill", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("student", help="the network to fine-tune: 'ppo' (the shipped one) or a checkpoint path")
    p.add_argument("--game", required=True, choices=sorted(tarot_env.ENV_IDS))
    p.add_argument("--teacher", default="pimc:worlds=64,rollout=random", help="any player spec (default: %(default)s)")
    p.add_argument("--phases", required=True, help="comma-separated phase names, e.g. A_MONTE or PLAY")
    p.add_argument("--games", type=int, default=600, help="first deals the student plays (default: %(default)s)")
    p.add_argument("--steps", type=int, default=200, help="Adam steps on full batches (default: %(default)s)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--kl-coef", type=float, default=1.0, help="weight of the KL term on the anchors")
    p.add_argument("--min-z", type=float, default=None,
                   help="a search teacher: label only the decisions where the search is this many standard errors "
                        "sure that its action beats the student's (the rest become anchors); default: label all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="the policy file to write")
    ns = p.parse_args(argv)
    try:
        report = distill(ns.student, ns.game, ns.teacher, [s for s in ns.phases.split(",") if s], ns.games, ns.seed,
                         ns.out, steps=ns.steps, lr=ns.lr, kl_coef=ns.kl_coef, min_z=ns.min_z)
    except ValueError as e:
        print(f"distill: error: {e}", file=sys.stderr)
        return 2
    for k, v in report.items():
        print(f"{k}: {v}")
    print(f"wrote {Path(ns.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
