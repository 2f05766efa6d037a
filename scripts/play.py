#!/usr/bin/env python
"""Play against policies in the terminal: ``python scripts/play.py --game partita --seat 0``.

Same as the ``tarot-play`` console command (see ``agents/human.py``); ``--replay game.jsonl`` replays a log.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.human import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
