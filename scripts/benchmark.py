#!/usr/bin/env python
"""The arena: ``python scripts/benchmark.py --game partita random heuristic checkpoints/x/final.pt``.

Duplicate deals between every pair of policies (baselines or checkpoints), in parallel processes;
per pair the mean score margin per deal with a bootstrap 95% CI and the share of deals won, and a
rating per policy (its margin per deal against random, with a 95% interval). Same as the ``tarot-arena``
console command (see ``agents/arena.py``).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.arena import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
