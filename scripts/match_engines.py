"""The same search in two forms on duplicate deals (docs/search.md, issue #33): is the faster one as strong?

    python scripts/match_engines.py --game millone --deals 200 --chunk 25

plays ``pimc:worlds=W,rollout=R`` with its uniform rollouts all in compiled code (``engine=auto``:
``<Game>Rows.random_playouts``) against the same player stepping the batched engine from Python
(``engine=stepped``: the search as it was before) with ``agents.evaluation.evaluate.duplicate_eval``, ``--chunk`` deals
at a time (seeds ``seed``, ``seed + 1`` ...) so that a partial run still counts: after each chunk it prints
the margin of the new form over all deals so far (game points per deal, averaged over both seatings) with
its 95% CI, and the CPU seconds each form spent searching. One seed reproduces the whole run.
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from agents.evaluation.evaluate import duplicate_eval
from agents.players.pimc import PIMCPolicy
from agents.spec import make_spec


class Timed:
    """A search player whose decisions' CPU time is summed (``cpu``, ``decisions``)."""

    def __init__(self, policy: PIMCPolicy):
        self.policy, self.cpu, self.decisions = policy, 0.0, 0

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def act_games(self, games):
        t = time.process_time()
        out = self.policy.act_games(games)
        self.cpu += time.process_time() - t
        self.decisions += len(games)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", required=True)
    ap.add_argument("--deals", type=int, default=200)
    ap.add_argument("--chunk", type=int, default=25)
    ap.add_argument("--worlds", type=int, default=64)
    ap.add_argument("--rollout", default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the margins and the totals to this file")
    a = ap.parse_args()
    spec = make_spec(a.game, {})
    new = Timed(PIMCPolicy(a.game, worlds=a.worlds, rollout=a.rollout, seed=a.seed, engine="auto"))
    old = Timed(PIMCPolicy(a.game, worlds=a.worlds, rollout=a.rollout, seed=a.seed + 1, engine="stepped"))
    margins: list[float] = []
    for k in range(math.ceil(a.deals / a.chunk)):
        n = min(a.chunk, a.deals - k * a.chunk)
        r = duplicate_eval(spec, new, old, deals=max(n, 2), seed=a.seed * 1000 + k)
        margins += r.margins.tolist()
        m = np.array(margins)
        ci = 1.96 * float(m.std(ddof=1)) / math.sqrt(len(m))
        out = {"game": a.game, "deals": len(m), "mean_margin": float(m.mean()), "ci95": ci,
               "won": float((m > 0).mean()), "tied": float((m == 0).mean()),
               "new_cpu_s": round(new.cpu, 1), "old_cpu_s": round(old.cpu, 1),
               "new_decisions": new.decisions, "old_decisions": old.decisions}
        print(json.dumps(out), flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(dict(out, margins=margins), f)


if __name__ == "__main__":
    main()
