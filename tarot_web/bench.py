"""Scripted clients over loopback: many games at once against a real uvicorn server.

:func:`serve` starts the app on a free port of 127.0.0.1 in a thread; :func:`play_games` plays ``n``
games at once, one client thread each (random legal moves for the page's seat, polling while the bots
move), and returns every error and the server's own time of every response (its ``Server-Timing``
header: the bots' thinking, done in the thread pool, is not in it). ``tests/test_web.py`` checks the
errors; ``scripts/bench_web.py`` reports the times (docs/web.md).
"""
from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from dataclasses import dataclass, field

import httpx
import uvicorn


@dataclass
class Run:
    """What the clients saw: errors (one line each), the server's ms per response, games finished."""

    errors: list[str] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    client_ms: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # the request of each server_ms: "new game", "move", "poll"
    finished: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(app, port: int | None = None):
    """The app served by uvicorn on 127.0.0.1 in a thread; yields its base URL, stops it after."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _kind(method: str, path: str) -> str:
    return "new game" if path == "/api/games" else "move" if method == "POST" else "poll"


def _request(client: httpx.Client, run: Run, method: str, path: str, **kw) -> dict:
    t = time.perf_counter()
    r = client.request(method, path, **kw)
    ms = (time.perf_counter() - t) * 1000
    timing = r.headers.get("server-timing", "")
    with run.lock:
        run.client_ms.append(ms)
        if timing.startswith("app;dur="):
            run.server_ms.append(float(timing.split("=", 1)[1]))
            run.kinds.append(_kind(method, path))
    if r.status_code >= 400:
        raise RuntimeError(f"{method} {path} -> {r.status_code} {r.text[:200]}")
    return r.json()


def play_one(base: str, run: Run, game: dict, seed: int, poll: float = 0.02) -> None:
    """One scripted client: create ``game`` (the request body), play random legal moves to its end."""
    rng = random.Random(seed)
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            v = _request(client, run, "POST", "/api/games", json={**game, "seed": seed})
            while not v["game_over"]:
                if v["bot_error"]:
                    raise RuntimeError(f"a bot failed: {v['bot_error']}")
                if not v["your_turn"]:
                    time.sleep(poll)
                    v = _request(client, run, "GET", f"/api/games/{v['id']}")
                    continue
                action = rng.choice(v["legal"])["action"]
                v = _request(client, run, "POST", f"/api/games/{v['id']}/action",
                             json={"seat": v["human_seat"], "action": action})
        with run.lock:
            run.finished += 1
    except Exception as e:  # counted, never raised: the caller reports every error
        with run.lock:
            run.errors.append(f"game {seed}: {type(e).__name__}: {e}")


def play_games(base: str, n: int, games: list[dict], seed: int = 0) -> Run:
    """``n`` games at once, one thread each, cycling through the request bodies ``games``."""
    run = Run()
    threads = [threading.Thread(target=play_one, args=(base, run, games[i % len(games)], seed + i))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return run


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s)) - 1))] if s else float("nan")
