#!/usr/bin/env python3
"""Migrate a policy trained on a v0 environment to v1 (issue #13), without retraining.

    python scripts/migrate_policy_v1.py agents/pretrained/partita.pt /tmp/partita_v1.pt

v1 appended the table-memory sections of RULES.md H.1.1 (public voids, signal cards, the trick of
every played card) after the v0 observation and state, whose sections keep their offsets
(``tarot_env.rules.<game>.OBS_V0_SIZE`` / ``STATE_V0_SIZE`` are the v0 sizes). So a v0 network becomes
a v1 network by giving its first layer zero weights for the new inputs: ``trunk.0.weight`` (the
actor, and the shared critic) gets zero columns ``[OBS_V0_SIZE, OBS_SIZE)``; a ``"separate"`` critic's
first layer likewise; a ``"central"`` critic's first layer (it reads ``state()``) zero columns
``[STATE_V0_SIZE, STATE_SIZE)``. The migrated network computes exactly what the v0 network computed on
the v0 part of the observation: it plays as before and ignores the new sections until it is trained
further. (On the v1 environments the old policy's own inputs are the same; only its games may differ
where the rules of Millone and Ottocento changed in v1.)

The output is a policy file (metadata + weights, like ``scripts/export_policy.py``), with
``env_id``/``env_version``/``obs_size``/``state_size`` of v1 and ``migrated_from`` recording the source;
a training checkpoint's optimizer, opponent pool and games in progress are not carried over (they hold
v0 shapes), so a migrated file is for playing and for starting a new training run, not ``--resume``.
The source file is only read (never overwritten: the destination must differ from it).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import tarot_env  # noqa: E402
from agents.policy import load_checkpoint, save_checkpoint  # noqa: E402

FROM_VERSION, TO_VERSION = "v0", "v1"


def _pad_columns(w: torch.Tensor, old: int, new: int, what: str) -> torch.Tensor:
    if w.ndim != 2 or w.shape[1] != old:
        raise ValueError(f"{what} has shape {tuple(w.shape)}; a {FROM_VERSION} network has {old} inputs there")
    out = torch.zeros((w.shape[0], new), dtype=w.dtype)
    out[:, :old] = w  # the v0 sections keep their offsets; the appended v1 inputs get weight 0
    return out


def migrate(ck: dict[str, Any], source: str = "") -> dict[str, Any]:
    """The v1 policy payload (``{"meta", "model"}``) of a loaded v0 checkpoint ``ck``; ValueError if
    ``ck`` is not a v0 checkpoint of a known game."""
    meta = dict(ck["meta"])
    game = meta.get("game")
    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"checkpoint of unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    if tarot_env.ENV_VERSIONS[game] != TO_VERSION:
        raise ValueError(f"this script migrates {FROM_VERSION} -> {TO_VERSION}, but {game} is now "
                         f"{tarot_env.ENV_IDS[game]}")
    old_id = f"tarocchini/{game}-{FROM_VERSION}"
    if meta.get("env_id") != old_id or meta.get("env_version") != FROM_VERSION:
        raise ValueError(f"checkpoint is of {meta.get('env_id')!r} ({meta.get('env_version')!r}), not of "
                         f"{old_id!r}: nothing to migrate")
    rules = importlib.import_module(tarot_env.GAMES[game].rules_module)
    obs0, obs1 = rules.OBS_V0_SIZE, rules.OBS.size
    st0, st1 = rules.STATE_V0_SIZE, rules.STATE.size
    if meta.get("obs_size") != obs0 or meta.get("state_size") != st0:
        raise ValueError(f"checkpoint has obs_size={meta.get('obs_size')}, state_size={meta.get('state_size')}; "
                         f"{old_id} had {obs0} and {st0}")
    model = {k: v.clone() for k, v in ck["model"].items()}
    model["trunk.0.weight"] = _pad_columns(model["trunk.0.weight"], obs0, obs1, "trunk.0.weight")
    critic = meta["config"].get("critic", "shared")
    if critic in ("separate", "central"):
        old, new = (obs0, obs1) if critic == "separate" else (st0, st1)
        model["critic_net.0.0.weight"] = _pad_columns(model["critic_net.0.0.weight"], old, new,
                                                      "critic_net.0.0.weight")
    meta.pop("checksum", None)
    meta.update(env_id=tarot_env.ENV_IDS[game], env_version=TO_VERSION, obs_size=obs1, state_size=st1,
                migrated_from=f"{source} ({old_id}: zero weights for the inputs added in {TO_VERSION})")
    return {"meta": meta, "model": model}


def migrate_file(src: str | Path, dst: str | Path) -> dict[str, Any]:
    """Read the v0 checkpoint ``src`` (checksum verified) and write its v1 policy file to ``dst``."""
    if Path(dst).resolve() == Path(src).resolve():
        raise ValueError(f"refusing to overwrite {str(src)!r}: give another destination")
    payload = migrate(load_checkpoint(src, any_env_version=True), str(src))
    save_checkpoint(dst, payload)
    return payload["meta"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help=f"a {FROM_VERSION} checkpoint or policy file")
    ap.add_argument("dst", help=f"where to write the {TO_VERSION} policy file")
    args = ap.parse_args(argv)
    try:
        meta = migrate_file(args.src, args.dst)
    except ValueError as e:
        ap.exit(2, f"error: {e}\n")
    print(f"wrote {args.dst}: {meta['game']} {meta['env_id']}, obs {meta['obs_size']}, "
          f"state {meta['state_size']}, actions {meta['num_actions']}")


if __name__ == "__main__":
    main()
