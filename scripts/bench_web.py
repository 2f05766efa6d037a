"""The server's own response time with many games at once (docs/web.md): scripted clients over loopback.

    python scripts/bench_web.py --games 100

starts ``tarot-web``'s app under uvicorn on a free port of 127.0.0.1, plays ``--games`` games at once
(one client thread each: random legal moves for the page's seat against ``--bots``, polling while the bots
move; the three games in turn, one hand each), and prints the errors and the percentiles of the server's
own time per response (its ``Server-Timing`` header: from the request's arrival to the response's first
byte, so the bots' thinking, done in the thread pool, is not in it) and of the time the clients saw.
"""
from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time

import httpx

from tarot_web.app import create_app
from tarot_web.bench import free_port, percentile, play_games, serve
from tarot_web.cli import warm

ONE_HAND = {"partita": {"deals_per_game": 1}, "millone": {"max_hands": 1}, "ottocento": {"max_hands": 1}}


@contextlib.contextmanager
def serve_process():
    """``tarot-web`` in its own process (it loads the rules before serving), so that the clients' threads
    do not share its interpreter lock; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tarot_web.cli", "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(base + "/api/meta", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=100, help="games at once (default: 100)")
    p.add_argument("--bots", default="random", help="the other seats' player (default: random)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--same-process", action="store_true",
                   help="serve from a thread of this process (as the test does) instead of a process of its own")
    ns = p.parse_args()
    warm()
    games = [{"game": g, "options": o, "players": ["human"] + [ns.bots] * (1 if g == "millone" else 3)}
             for g, o in ONE_HAND.items()]
    with (serve(create_app()) if ns.same_process else serve_process()) as base:
        t = time.perf_counter()
        run = play_games(base, ns.games, games, ns.seed)
        wall = time.perf_counter() - t
    where = "a thread of the clients' process" if ns.same_process else "its own process"
    print(f"server in {where}; {ns.games} games at once ({', '.join(ONE_HAND)} in turn, one hand each, "
          f"bots: {ns.bots}): {run.finished} finished, {len(run.errors)} errors, "
          f"{len(run.server_ms)} responses in {wall:.1f} s")
    for e in run.errors[:5]:
        print("  error:", e)
    by_kind = [(f"  {k} ({sum(x == k for x in run.kinds)})", [m for m, x in zip(run.server_ms, run.kinds) if x == k])
               for k in ("new game", "move", "poll")]
    for name, ms in (("server's own time", run.server_ms), *by_kind, ("time seen by the clients", run.client_ms)):
        print(f"{name}: p50 {percentile(ms, 50):.1f} ms, p95 {percentile(ms, 95):.1f} ms, "
              f"p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms")


if __name__ == "__main__":
    main()
