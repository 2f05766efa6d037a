#!/usr/bin/env python3
"""Migrate a policy trained on an earlier version of its environment to the current one, without retraining.

    python scripts/migrate_policy.py agents/pretrained/partita.pt /tmp/partita_v1.pt   # v0 -> v1
    python scripts/migrate_policy.py checkpoints/ottocento_ft4/final.pt /tmp/ottocento_v2.pt   # v1 -> v2

Every version so far has only *appended* sections to the observation and the state, keeping the
offsets of the earlier ones (v1: the table memory of RULES.md H.1.1 in every game; Ottocento v2: the
won piles' combination features, issue #12). Each rules module lists the size of each version's
prefix (``OBS_SIZES``, ``STATE_SIZES``: ``{"v0": 1164, "v1": 1432, "v2": 1558}`` for Ottocento's
observation). So an old network becomes a current one by giving its first layer zero weights for the
new inputs: ``trunk.0.weight`` (the actor, and the shared critic) gets zero columns from the old size
to the current one; a ``"separate"`` critic's first layer likewise; a ``"central"`` critic's first layer
(it reads ``state()``) zero columns from the old state size. The migrated network computes exactly what
the old one computed on the old part of the observation: it plays as before and ignores the new sections
until it is trained further. (Where the rules changed with a version, its games may still differ.)

The output is a policy file (metadata + weights, like ``scripts/export_policy.py``), with
``env_id``/``env_version``/``obs_size``/``state_size`` of the current version and ``migrated_from``
recording the source; a training checkpoint's optimizer, opponent pool and games in progress are not
carried over (they hold the old shapes), so a migrated file is for playing and for starting a new
training run (``init_from=``), not ``--resume``. The source file is only read (never overwritten: the
destination must differ from it).
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
from agents.players.policy import load_checkpoint, save_checkpoint  # noqa: E402


def _pad_columns(w: torch.Tensor, old: int, new: int, what: str, version: str) -> torch.Tensor:
    if w.ndim != 2 or w.shape[1] != old:
        raise ValueError(f"{what} has shape {tuple(w.shape)}; a {version} network has {old} inputs there")
    out = torch.zeros((w.shape[0], new), dtype=w.dtype)
    out[:, :old] = w  # the old sections keep their offsets; the appended inputs get weight 0
    return out


def migrate(ck: dict[str, Any], source: str = "") -> dict[str, Any]:
    """The current version's policy payload (``{"meta", "model"}``) of a loaded checkpoint ``ck`` of an
    earlier version; ValueError if ``ck`` is of an unknown game, of an unknown version, or already current."""
    meta = dict(ck["meta"])
    game = meta.get("game")
    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"checkpoint of unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    rules = importlib.import_module(tarot_env.GAMES[game].rules_module)
    current = tarot_env.ENV_VERSIONS[game]
    old = meta.get("env_version")
    if old == current or meta.get("env_id") == tarot_env.ENV_IDS[game]:
        raise ValueError(f"checkpoint is of {meta.get('env_id')!r} ({old!r}), the current version: nothing to "
                         f"migrate")
    earlier = [v for v in rules.OBS_SIZES if v != current]
    if old not in earlier or meta.get("env_id") != f"tarocchini/{game}-{old}":
        raise ValueError(f"checkpoint is of {meta.get('env_id')!r} ({old!r}); this script migrates "
                         f"{[f'tarocchini/{game}-{v}' for v in earlier]} to {tarot_env.ENV_IDS[game]!r}")
    obs0, obs1 = rules.OBS_SIZES[old], rules.OBS.size
    st0, st1 = rules.STATE_SIZES[old], rules.STATE.size
    if meta.get("obs_size") != obs0 or meta.get("state_size") != st0:
        raise ValueError(f"checkpoint has obs_size={meta.get('obs_size')}, state_size={meta.get('state_size')}; "
                         f"tarocchini/{game}-{old} had {obs0} and {st0}")
    model = {k: v.clone() for k, v in ck["model"].items()}
    model["trunk.0.weight"] = _pad_columns(model["trunk.0.weight"], obs0, obs1, "trunk.0.weight", old)
    critic = meta["config"].get("critic", "shared")
    if critic in ("separate", "central"):
        a, b = (obs0, obs1) if critic == "separate" else (st0, st1)
        model["critic_net.0.0.weight"] = _pad_columns(model["critic_net.0.0.weight"], a, b,
                                                      "critic_net.0.0.weight", old)
    meta.pop("checksum", None)
    meta.update(env_id=tarot_env.ENV_IDS[game], env_version=current, obs_size=obs1, state_size=st1,
                migrated_from=f"{source} (tarocchini/{game}-{old}: zero weights for the inputs added since)")
    return {"meta": meta, "model": model}


def migrate_file(src: str | Path, dst: str | Path) -> dict[str, Any]:
    """Read the checkpoint ``src`` of an earlier version (checksum verified) and write its policy file for
    the current version to ``dst``."""
    if Path(dst).resolve() == Path(src).resolve():
        raise ValueError(f"refusing to overwrite {str(src)!r}: give another destination")
    payload = migrate(load_checkpoint(src, any_env_version=True), str(src))
    save_checkpoint(dst, payload)
    return payload["meta"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="a checkpoint or policy file of an earlier environment version")
    ap.add_argument("dst", help="where to write the policy file for the current version")
    args = ap.parse_args(argv)
    try:
        meta = migrate_file(args.src, args.dst)
    except ValueError as e:
        ap.exit(2, f"error: {e}\n")
    print(f"wrote {args.dst}: {meta['game']} {meta['env_id']}, obs {meta['obs_size']}, "
          f"state {meta['state_size']}, actions {meta['num_actions']}")


if __name__ == "__main__":
    main()
