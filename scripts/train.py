#!/usr/bin/env python
"""Train a PPO self-play agent: ``python scripts/train.py --config configs/partita.yaml [key=value ...]``.

Same as the ``tarot-train`` console command (see ``agents/ppo.py`` for every option).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.ppo import main  # noqa: E402

if __name__ == "__main__":
    main()
