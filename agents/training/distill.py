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
   the anchors (Adam, ``steps`` steps on full batches, or on minibatches of ``batch``). The critic is not
   touched.
3. **Write** a policy file in the shipped format (metadata + weights, whole-content checksum), its meta
   recording the teacher, phases, positions and seed (``meta["distilled"]``).

With ``opponent`` the student holds one team and that player the other, so the positions are the ones
the student meets against it. Step 1 is the slow part with a search teacher (seconds a deal), so its
positions can be written to a ``.npz`` file (``--save-positions``: plain arrays and a JSON header, no
pickle) by several processes with other seeds, and fitted together later, with other settings
(``--positions``); the file names the game and the student, and is checked whole before use.

Everything is seeded: the same arguments give the same file. From the command line::

    python -m agents.training.distill ppo --game ottocento --teacher "pimc:worlds=64,rollout=random" \\
        --phases A_MONTE --games 600 --seed 0 --out ottocento_distilled.pt
    python -m agents.training.distill ppo --game partita --teacher "ppo+pimc:worlds=64" --opponent random \\
        --phases PLAY --min-z 2 --games 100 --seed 1 --threads 1 --save-positions p1.npz  # (p2.npz, ...)
    python -m agents.training.distill ppo --game partita --positions p1.npz p2.npz --seed 0 --out partita_d.pt
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..players.policy import NetworkPolicy, Policy, model_checksum, save_checkpoint
from ..spec import GameSpec, make_spec


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
                      seed: int, max_anchors: int = 20000, min_z: float | None = None,
                      opponent: Policy | None = None) -> Positions:
    """Step 1 (module docstring): ``games`` first deals, dealt from ``seed``, played by the student.

    With ``min_z`` (a search teacher only) a decision of ``phases`` is labelled only where the search is
    confident that the student's own action is worse (:func:`confident_change`), and is an anchor
    otherwise: the student changes only where the search is sure, and keeps the rest of its play.

    With an ``opponent`` (any player) the student holds one team only, team 0 in the even-numbered deals
    and team 1 in the odd ones, and the opponent plays the other team's seats; only the student's own
    decisions become positions. The positions are then the ones the student meets against that opponent
    (e.g. random play, where the student should win nearly every deal)."""
    _check_collect(spec, teacher, phases, games, min_z)
    rng = np.random.default_rng(seed)
    seeds = [int(s) for s in rng.integers(2**62, size=games)]
    O, A = spec.obs_size, spec.num_actions
    labels: tuple[list, list, list, list] = ([], [], [], [])  # observations, masks, teacher's and student's actions
    anc_obs, anc_mask = [], []
    team_of = spec.team_of
    live = [(i, spec.new_game(s)) for i, s in enumerate(seeds)]
    while live:
        if opponent is not None:  # the opponent's seats first, until every game waits on the student
            live = _opponent_turns(opponent, live, team_of)
            if not live:
                break
        obs, mask = _observe([g for _, g in live], O, A)
        acts = student.act_batch(obs, mask)
        for k, (_, g) in enumerate(live):
            if mask[k].sum() < 2:
                continue
            if g.phase.name in phases and _label(teacher, g, obs, mask, k, int(acts[k]), min_z, labels):
                continue
            anc_obs.append(obs[k].copy())
            anc_mask.append(mask[k].copy())
        for k, (_, g) in enumerate(live):
            g.apply_unchecked(int(acts[k]))
        live = [(i, g) for i, g in live if not g.history]  # first deals only
    lab_obs, lab_mask, lab_t, lab_s = labels
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


def _check_collect(spec: GameSpec, teacher: Policy, phases: list[str], games: int, min_z: float | None) -> None:
    """:func:`collect_positions`' arguments: a ``ValueError`` naming the first wrong one."""
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


def _opponent_turns(opponent: Policy, live: list, team_of) -> list:
    """The opponent plays its seats (the other team than game ``i``'s ``i % 2``) until every game waits on
    the student; returns the games still in their first deal."""
    theirs = [g for i, g in live if team_of[g.current] != i % 2]
    while theirs:
        _act(opponent, theirs)
        theirs = [g for i, g in live if not g.history and team_of[g.current] != i % 2]
    return [(i, g) for i, g in live if not g.history]


def _observe(games: list, O: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    """The observations and legal masks of the players to move in ``games``."""
    obs = np.empty((len(games), O), dtype=np.float32)
    mask = np.empty((len(games), A), dtype=bool)
    for k, g in enumerate(games):
        g.observation(g.current, out=obs[k])
        mask[k] = g.legal_mask()
    return obs, mask


def _label(teacher: Policy, g, obs: np.ndarray, mask: np.ndarray, k: int, student_action: int,
           min_z: float | None, labels: tuple[list, list, list, list]) -> bool:
    """Ask the teacher about decision ``k`` (game ``g``); add it to ``labels`` and return True, unless
    ``min_z`` is set and the search is not sure the student's action is worse (then it is an anchor)."""
    t = (int(teacher.act_games([g.clone()])[0]) if getattr(teacher, "needs_game", False)
         else int(teacher.act_batch(obs[k:k + 1], mask[k:k + 1])[0]))
    if min_z is not None and not confident_change(teacher.last, student_action, min_z):
        return False
    for part, x in zip(labels, (obs[k].copy(), mask[k].copy(), t, student_action)):
        part.append(x)
    return True


def _act(player: Policy, games: list) -> None:
    """One decision of ``player`` in each of ``games``."""
    for g, a in zip(games, player.act_games(games)):
        g.apply_unchecked(int(a))


def _check_batch(batch: int | None) -> None:
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ValueError(f"batch must be a whole number ≥ 1 or None (got {batch!r})")


POSITIONS_FORMAT = 1
_POSITION_ARRAYS = {"obs": (np.float32, "O"), "mask": (np.bool_, "A"), "target": (np.int64, None),
                    "student": (np.int64, None), "anchor_obs": (np.float32, "O"), "anchor_mask": (np.bool_, "A"),
                    "anchor_probs": (np.float32, "A")}


def save_positions(path: str | Path, pos: Positions, info: dict) -> None:
    """Write step 1's positions to a ``.npz`` file (plain arrays and one JSON header, no pickle), so that
    several collections (other seeds, other processes) can be fitted together or with other settings.
    ``info`` must name the game's ``env_id`` and the student's ``student_checksum`` (the anchors hold that
    network's probabilities); :func:`load_positions` checks both."""
    write_arrays(path, {k: getattr(pos, k) for k in _POSITION_ARRAYS}, {"format": POSITIONS_FORMAT, **info})


def write_arrays(path: str | Path, arrays: dict[str, np.ndarray], header: dict) -> None:
    """Plain arrays and one JSON ``header`` in a ``.npz`` file (no pickle; read back by :func:`read_arrays`).
    Written to ``<path>.tmp`` first and renamed, so a killed writer never leaves half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, header=np.array(json.dumps(header, sort_keys=True)), **arrays)
    tmp.replace(path)


def load_positions(paths: list[str], spec: GameSpec, student_checksum: str) -> tuple[Positions, list[dict]]:
    """The positions of one or more :func:`save_positions` files, joined, after checking every part of
    every file before using any of it: the header, the game and its sizes, the student that made them,
    each array's dtype and shape, the labels inside each position's legal mask. Returns the positions and
    the files' headers."""
    if not paths:
        raise ValueError("name one or more positions files")
    parts, headers = [], []
    for path in paths:
        data, header = read_arrays(path, _POSITION_ARRAYS, spec, student_checksum, POSITIONS_FORMAT)
        _check_position_labels(path, data, spec)
        parts.append(data)
        headers.append(header)
    joined = {k: np.concatenate([d[k] for d in parts]) for k in _POSITION_ARRAYS}
    if not len(joined["target"]):
        raise ValueError(f"{', '.join(paths)}: no labelled positions")
    return Positions(**joined), headers


def read_arrays(path: str | Path, schema: dict, spec: GameSpec, student_checksum: str,
                fmt: int) -> tuple[dict[str, np.ndarray], dict]:
    """One :func:`write_arrays` file's arrays and header, every part checked before any is used: it loads
    without pickle, holds exactly the arrays of ``schema`` (name -> (dtype, width: ``"O"`` observation,
    ``"A"`` actions, ``"S"`` state or None for one number a position)) with those dtypes and shapes and one
    length, all finite; its JSON header has format ``fmt``, the game's ``env_id`` and ``student_checksum``
    (the network that collected the positions)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{path}: not a positions file ({e})") from None
    want = set(schema) | {"header"}
    if "header" not in data:
        raise ValueError(f"{path}: not a positions file: it holds {sorted(data)}, a positions file {sorted(want)}")
    header = _positions_header(path, data, spec, student_checksum, fmt)  # first: another format holds other arrays
    if set(data) != want:
        raise ValueError(f"{path}: not a positions file: it holds {sorted(data)}, a positions file {sorted(want)}")
    _check_arrays(path, data, schema, spec)
    return data, header


def _positions_header(path, data: dict[str, np.ndarray], spec: GameSpec, student_checksum: str, fmt: int) -> dict:
    """The file's JSON header, checked: the format, the game, the student that collected the positions."""
    try:
        header = json.loads(str(data["header"][()]))
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: its header is not JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise ValueError(f"{path}: positions format {header.get('format') if isinstance(header, dict) else '?'!r}"
                         f", this version reads format {fmt}")
    if header.get("env_id") != spec.env_id:
        raise ValueError(f"{path}: positions of {header.get('env_id')!r}, not of {spec.env_id!r}")
    if header.get("student_checksum") != student_checksum:
        raise ValueError(f"{path}: positions collected by another network (its anchors hold that network's "
                         f"probabilities); collect them again with this student")
    return header


def _check_arrays(path, data: dict[str, np.ndarray], schema: dict, spec: GameSpec) -> None:
    """Each array's dtype and shape (``schema``), one length for the anchors (``anchor_*``) and one for
    the rest, finite floats."""
    size = {"O": spec.obs_size, "A": spec.num_actions, "S": spec.state_size}
    for k, (dtype, width) in schema.items():
        a = data[k]
        if a.dtype != dtype or a.ndim != (1 if width is None else 2) or (width and a.shape[1] != size[width]):
            raise ValueError(f"{path}: array {k!r} is {a.dtype}{list(a.shape)}, expected {np.dtype(dtype)}"
                             f"[n{'' if width is None else f', {size[width]}'}]")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"{path}: non-finite values in {k!r}")
    groups: dict[str, set] = {}
    for k in schema:
        groups.setdefault("anchor" if k.startswith("anchor_") else "", set()).add(len(data[k]))
    if any(len(n) > 1 for n in groups.values()):
        raise ValueError(f"{path}: its arrays disagree on the number of positions")


def _check_position_labels(path, data: dict[str, np.ndarray], spec: GameSpec) -> None:
    """The teacher's and the student's actions inside each position's legal mask."""
    n = len(data["obs"])
    for k in ("target", "student"):
        a = data[k]
        inside = (a >= 0) & (a < spec.num_actions)
        if not inside.all() or not data["mask"][np.arange(n), np.where(inside, a, 0)].all():
            raise ValueError(f"{path}: a {k} action outside its position's legal mask")


def student_anchors(spec: GameSpec, student: NetworkPolicy, games: int, seed: int) -> tuple[np.ndarray, ...]:
    """Anchors without a teacher, which cost next to nothing: every decision with a choice of ``games``
    first deals that the student plays at every seat (greedy). Returns observations, masks and the
    student's probabilities there."""
    rng = np.random.default_rng([seed, 1])
    live = [spec.new_game(int(s)) for s in rng.integers(2**62, size=games)]
    O, A = spec.obs_size, spec.num_actions
    obs_parts, mask_parts = [], []
    while live:
        obs = np.empty((len(live), O), dtype=np.float32)
        mask = np.empty((len(live), A), dtype=bool)
        for k, g in enumerate(live):
            g.observation(g.current, out=obs[k])
            mask[k] = g.legal_mask()
        acts = student.act_batch(obs, mask)
        choice = mask.sum(1) > 1
        obs_parts.append(obs[choice])
        mask_parts.append(mask[choice])
        for k, g in enumerate(live):
            g.apply_unchecked(int(acts[k]))
        live = [g for g in live if not g.history]
    obs_a = np.concatenate(obs_parts) if obs_parts else np.zeros((0, O), np.float32)
    mask_a = np.concatenate(mask_parts) if mask_parts else np.zeros((0, A), bool)
    probs = np.concatenate([student.probs(obs_a[i:i + 8192], mask_a[i:i + 8192])
                            for i in range(0, len(obs_a), 8192)] or [np.zeros((0, A))]).astype(np.float32)
    return obs_a, mask_a, probs


def anchor_kl(model, obs: torch.Tensor, mask: torch.Tensor, p_old: torch.Tensor) -> torch.Tensor:
    """The mean KL divergence from ``p_old`` (a network's probabilities before the fit) to ``model``'s
    masked softmax now, over the positions ``obs``/``mask``: the anchor that keeps a fine-tuned network's
    play where the labels do not move it."""
    logp = torch.log_softmax(model.masked_logits(obs, mask), dim=1)
    logp_old = torch.log(p_old.clamp_min(1e-12))
    return (p_old * (logp_old - logp)).masked_fill(~mask, 0.0).sum(1).mean()


def minibatch(n: int, batch: int | None, gen: torch.Generator) -> torch.Tensor | None:
    """``batch`` of ``n`` positions drawn anew (seeded by ``gen``), or None (all) for full batches."""
    return None if batch is None or n <= batch else torch.randperm(n, generator=gen)[:batch]


def fine_tune(student: NetworkPolicy, pos: Positions, steps: int = 200, lr: float = 3e-4, kl_coef: float = 1.0,
              seed: int = 0, batch: int | None = None) -> dict:
    """Step 2 (module docstring), in place on ``student.model``; returns the losses before and after.

    ``batch=None``: every step on all positions (full batches). ``batch=B``: every step on ``B`` labelled
    positions and ``B`` anchors drawn anew (seeded), for position sets too large for full batches."""
    _check_batch(batch)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = student.model
    params = list(model.trunk.parameters()) + list(model.pi.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    obs, mask = torch.as_tensor(pos.obs), torch.as_tensor(pos.mask)
    target = torch.as_tensor(pos.target)
    a_obs, a_mask = torch.as_tensor(pos.anchor_obs), torch.as_tensor(pos.anchor_mask)
    a_p_old = torch.as_tensor(pos.anchor_probs)

    def losses(li=None, ai=None) -> tuple[torch.Tensor, torch.Tensor]:
        li = slice(None) if li is None else li
        ai = slice(None) if ai is None else ai
        ce = torch.nn.functional.cross_entropy(model.masked_logits(obs[li], mask[li]), target[li])
        kl = anchor_kl(model, a_obs[ai], a_mask[ai], a_p_old[ai]) if len(a_obs) else torch.zeros(())
        return ce, kl

    model.train()
    with torch.no_grad():
        ce0, kl0 = losses()
    for _ in range(steps):
        ce, kl = losses(minibatch(len(obs), batch, gen), minibatch(len(a_obs), batch, gen))
        opt.zero_grad()
        (ce + kl_coef * kl).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        ce1, kl1 = losses()
        agree = float((model.masked_logits(obs, mask).argmax(1) == target).float().mean())
    return {"ce_before": float(ce0), "kl_before": float(kl0), "ce_after": float(ce1), "kl_after": float(kl1),
            "agreement_before": pos.agreement, "agreement_after": agree}


def distill(student_spec: str, game: str, teacher_spec: str, phases: list[str], games: int, seed: int,
            out: str | None, steps: int = 200, lr: float = 3e-4, kl_coef: float = 1.0, min_z: float | None = None,
            opponent_spec: str | None = None, positions_out: str | None = None,
            positions_in: list[str] | None = None, anchor_games: int = 0, batch: int | None = None) -> dict:
    """Steps 1–3 (module docstring); returns what it measured (also stored in the file's meta).

    ``positions_out`` also writes step 1's positions (:func:`save_positions`); ``positions_in`` fits the
    positions of such files instead of collecting (``teacher_spec``, ``phases``, ``games`` and
    ``opponent_spec`` are then read from the files). ``out=None`` with ``positions_out`` only collects.
    ``anchor_games`` adds the anchors of that many deals the student plays alone (:func:`student_anchors`,
    seeded by ``seed``) to the fit, which keeps the rest of its play where it was over many more positions
    than the labelling visits; ``batch`` fits in minibatches (:func:`fine_tune`)."""
    from ..players.registry import load_policy

    student = load_policy(student_spec, game)
    if not isinstance(student, NetworkPolicy):
        raise ValueError(f"the student must be a network (a checkpoint or 'ppo'), not {student_spec!r}")
    if out is None and positions_out is None:
        raise ValueError("name a policy file to write (out), a positions file (positions_out), or both")
    if isinstance(anchor_games, bool) or not isinstance(anchor_games, int) or anchor_games < 0:
        raise ValueError(f"anchor_games must be a whole number ≥ 0 (got {anchor_games!r})")
    _check_batch(batch)
    spec = make_spec(game, student.meta.get("config", {}).get("game_options", {}))
    checksum = model_checksum(student.model.state_dict())
    t0 = time.perf_counter()
    if positions_in:
        pos, headers = load_positions(list(positions_in), spec, checksum)
        teacher_spec = " + ".join(sorted({str(h.get("teacher")) for h in headers}))
        phases = sorted({p for h in headers for p in h.get("phases", [])})
        games = sum(int(h.get("games", 0)) for h in headers)
        opponent_spec = " + ".join(sorted({str(h["opponent"]) for h in headers if h.get("opponent")})) or None
        min_z = headers[0].get("min_z") if len({h.get("min_z") for h in headers}) == 1 else None
    else:
        teacher = load_policy(teacher_spec, game, seed=seed)
        opponent = load_policy(opponent_spec, game, seed=seed + 1) if opponent_spec else None
        pos = collect_positions(spec, student, teacher, phases, games, seed, min_z=min_z, opponent=opponent)
        if positions_out:
            save_positions(positions_out, pos, {"env_id": spec.env_id, "student_checksum": checksum,
                                                "teacher": teacher_spec, "phases": list(phases), "games": games,
                                                "seed": seed, "min_z": min_z, "opponent": opponent_spec})
    if anchor_games and out is not None:
        extra = student_anchors(spec, student, anchor_games, seed)
        pos = Positions(pos.obs, pos.mask, pos.target, pos.student, np.concatenate([pos.anchor_obs, extra[0]]),
                        np.concatenate([pos.anchor_mask, extra[1]]), np.concatenate([pos.anchor_probs, extra[2]]))
    t1 = time.perf_counter()
    report = {"labelled": len(pos.target), "anchors": len(pos.anchor_obs), "positions_seconds": round(t1 - t0, 1),
              "agreement_before": pos.agreement}
    if out is not None:
        report.update(fine_tune(student, pos, steps=steps, lr=lr, kl_coef=kl_coef, seed=seed, batch=batch))
    report.update(teacher_actions={int(a): int(n) for a, n in zip(*np.unique(pos.target, return_counts=True))},
                  student_actions={int(a): int(n) for a, n in zip(*np.unique(pos.student, return_counts=True))})
    if out is not None:
        meta = {k: v for k, v in student.meta.items() if k != "checksum"}
        meta["distilled"] = {"from": str(student_spec), "teacher": teacher_spec, "phases": list(phases),
                             "games": games, "seed": seed, "steps": steps, "lr": lr, "kl_coef": kl_coef,
                             "min_z": min_z, "opponent": opponent_spec, "positions_files": list(positions_in or []),
                             "anchor_games": anchor_games, "batch": batch,
                             **{k: v for k, v in report.items() if not isinstance(v, dict)}}
        save_checkpoint(out, {"meta": meta, "model": student.model.state_dict()})
    return report


def main(argv: list[str] | None = None) -> int:
    import tarot_env

    p = argparse.ArgumentParser(prog="python -m agents.training.distill", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("student", help="the network to fine-tune: 'ppo' (the shipped one) or a checkpoint path")
    p.add_argument("--game", required=True, choices=sorted(tarot_env.ENV_IDS))
    p.add_argument("--teacher", default="pimc:worlds=64,rollout=random", help="any player spec (default: %(default)s)")
    p.add_argument("--phases", help="comma-separated phase names, e.g. A_MONTE or PLAY (not with --positions)")
    p.add_argument("--games", type=int, default=600, help="first deals the student plays (default: %(default)s)")
    p.add_argument("--steps", type=int, default=200, help="Adam steps (default: %(default)s)")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--kl-coef", type=float, default=1.0, help="weight of the KL term on the anchors")
    p.add_argument("--min-z", type=float, default=None,
                   help="a search teacher: label only the decisions where the search is this many standard errors "
                        "sure that its action beats the student's (the rest become anchors); default: label all")
    p.add_argument("--opponent", default=None,
                   help="a player spec: the student holds one team and this player the other (default: the student "
                        "plays every seat)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-positions", metavar="FILE.npz", default=None,
                   help="also write the collected positions to this file")
    p.add_argument("--positions", metavar="FILE.npz", nargs="+", default=None,
                   help="fit the positions of these files (written by --save-positions for the same student) "
                        "instead of collecting")
    p.add_argument("--out", default=None, help="the policy file to write (may be left out with --save-positions)")
    p.add_argument("--anchor-games", type=int, default=0,
                   help="also keep the student's play of this many deals it plays alone (cheap anchors)")
    p.add_argument("--batch", type=int, default=None, help="minibatch size per step (default: full batches)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default: torch's own); 1 for collections run side by side, one per core")
    ns = p.parse_args(argv)
    if ns.threads is not None:
        if ns.threads < 1:
            p.error(f"--threads must be at least 1 (got {ns.threads})")
        torch.set_num_threads(ns.threads)
    if ns.positions and (ns.phases or ns.opponent or ns.min_z is not None or ns.save_positions):
        p.error("--positions fits saved positions: --phases, --opponent, --min-z and --save-positions "
                "belong to the collection that wrote them")
    if not ns.positions and not ns.phases:
        p.error("--phases is required (unless --positions names saved positions)")
    try:
        report = distill(ns.student, ns.game, ns.teacher, [s for s in (ns.phases or "").split(",") if s], ns.games,
                         ns.seed, ns.out, steps=ns.steps, lr=ns.lr, kl_coef=ns.kl_coef, min_z=ns.min_z,
                         opponent_spec=ns.opponent, positions_out=ns.save_positions, positions_in=ns.positions,
                         anchor_games=ns.anchor_games, batch=ns.batch)
    except ValueError as e:
        print(f"distill: error: {e}", file=sys.stderr)
        return 2
    for k, v in report.items():
        print(f"{k}: {v}")
    for f in (ns.save_positions, ns.out):
        if f:
            print(f"wrote {Path(f)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
