#!/usr/bin/env python3
"""Export a small policy-only file from a training checkpoint.

    python scripts/export_policy.py checkpoints/partita_s1/final.pt agents/pretrained/partita.pt

The result loads with ``agents.players.registry.load_policy(path, game)`` (and, for the files under
``agents/pretrained/``, by the name ``"ppo"``); it holds the metadata (game, sizes, config) and the
network weights, read back with ``torch.load(weights_only=True)`` and a checksum.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.players.policy import export_policy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="a training checkpoint (checkpoints/<run>/final.pt)")
    ap.add_argument("dst", help="where to write the policy file")
    args = ap.parse_args()
    meta = export_policy(args.src, args.dst)
    size = Path(args.dst).stat().st_size
    print(f"wrote {args.dst} ({size / 1e6:.1f} MB): {meta['game']}, obs {meta['obs_size']}, "
          f"actions {meta['num_actions']}, trained {meta.get('step', '?')} decisions")


if __name__ == "__main__":
    main()
