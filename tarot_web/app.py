"""The web app (Starlette); the ``tarot-web`` command line is :mod:`tarot_web.cli`.

Routes (every error is a 4xx JSON ``{"error": "..."}`` naming what is wrong, and changes nothing):

* ``GET /`` the page; ``GET /static/...`` its script, style and nothing fetched from elsewhere;
* ``GET /api/meta``: the games (cards, seats, rules options), the players a page may choose, defaults;
* ``POST /api/games`` ``{game, players, seed?, options?, pace?}``: a new game; ``players`` is one spec
  per seat, ``"human"`` for the page's own seat (none: a watched game);
* ``GET /api/games/{id}``: the table as the page's seat knows it (a watched game: everything);
* ``POST /api/games/{id}/action`` ``{seat, action}``; ``/undo`` ``{seat}``; ``/hint`` ``{seat}``;
* ``GET /api/games/{id}/log``: a finished game as JSON lines (``tarot-play --replay`` reads it);
* ``POST /api/replays`` (a JSONL log as the body) and ``GET /api/replays/{id}/{k}``: a log, step by step.

Every response carries ``Server-Timing: app;dur=MS``, the server's own time for it (the bots think in a
thread pool, outside any request).
"""
from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import tarot_env
from agents.players.baselines import BASELINES
from tarot_env.config import make_config

from .logs import Replay, parse_log
from .players import HUMAN, PlayerRules, label
from .requests import MAX_BODY, MAX_LOG, BadRequest, float_field, int_field, options_field, parse_json, str_field
from .session import Session
from .view import seat_view, table_view

STATIC = Path(__file__).resolve().parent / "static"
LOG_TYPES = ("application/x-ndjson", "application/jsonl")  # the media types of an uploaded game log
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # the host names a local server answers to


class Store:
    """The games and replays in memory: at most ``max_games``, each dropped after ``idle`` seconds
    without a request."""

    def __init__(self, max_games: int = 500, idle: float = 3600.0):
        self.max_games, self.idle = max_games, idle
        self.games: dict[str, Session] = {}
        self.replays: dict[str, dict] = {}
        self.lock = threading.Lock()

    def add(self, table: dict, key: str, item) -> None:
        with self.lock:
            self._expire()
            if len(self.games) + len(self.replays) >= self.max_games:
                raise BadRequest(429, f"the server holds {self.max_games} games already; try again later")
            table[key] = item

    def get(self, table: dict, key: str, what: str):
        with self.lock:
            item = table.get(key)
        if item is None:
            raise BadRequest(404, f"unknown {what} id {key!r} (ended, expired or never made)")
        return item

    def _expire(self) -> None:
        now = time.monotonic()
        for gid in [g for g, s in self.games.items() if now - s.last_used > self.idle and not s.thinking]:
            del self.games[gid]
        for rid in [r for r, x in self.replays.items() if now - x["last_used"] > self.idle]:
            del self.replays[rid]


class Tables:
    """The app's state: the store, the player rules, the thread pool of the bots, the page's defaults."""

    def __init__(self, rules: PlayerRules, defaults: dict, max_games: int, workers: int):
        self.rules, self.defaults = rules, defaults
        self.store = Store(max_games)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tarot-bots")

    def wake_bots(self, s: Session) -> None:
        """Start the bots' turns (the caller holds ``s.lock``)."""
        if s.bots_to_move() and not s.thinking and s.bot_error is None:
            s.thinking = True
            self.pool.submit(s.run_bots, self.later)

    def later(self, seconds: float, fn) -> None:
        """Run ``fn`` in the pool after ``seconds`` (a paced game's next move), holding no worker meanwhile."""
        timer = threading.Timer(seconds, self.pool.submit, args=(fn,))
        timer.daemon = True
        timer.start()


# --- requests -----------------------------------------------------------------------------------------
async def read_body(request: Request, limit: int, media_types: tuple[str, ...]) -> bytes:
    """The request's body, of one of ``media_types`` (so that another site's page cannot send it without
    the browser asking first) and at most ``limit`` bytes (read no further)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in media_types:
        raise BadRequest(415, f"send the body as {' or '.join(media_types)}, not {kind or 'no content type'!r}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"request body of {declared} bytes is over the limit of {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def body(request: Request, allowed: set[str]) -> dict:
    return parse_json(await read_body(request, MAX_BODY, ("application/json",)), allowed)


def tables(request: Request) -> Tables:
    return request.app.state.tables


def session_of(request: Request) -> Session:
    s = tables(request).store.get(tables(request).store.games, request.path_params["gid"], "game")
    s.last_used = time.monotonic()
    return s


def view_response(s: Session, status: int = 200) -> JSONResponse:
    with s.lock:
        return JSONResponse(seat_view(s, s.human), status_code=status)


async def index(request: Request):
    return FileResponse(STATIC / "index.html", media_type="text/html")


async def meta(request: Request):
    t = tables(request)
    games = {}
    for key, info in tarot_env.GAMES.items():
        G = info.rules_class()
        games[key] = {"players": G.num_players, "teams": G.num_teams, "pack": G.pack.key,
                      "cards": [{"name": n, "suit": int(G.pack.suit[c])} for c, n in enumerate(G.pack.names)],
                      "suit_names": list(G.pack.suit_names), "description": info.description,
                      "options": G.Config().to_dict()}
    return JSONResponse({"games": games, "players": t.rules.allowed(), "defaults": t.defaults,
                         "think_time": t.rules.think_time})


def _players(data: dict, game: str, rules: PlayerRules) -> list[str]:
    n = tarot_env.GAMES[game].players
    specs = data.get("players")
    if not isinstance(specs, list) or len(specs) != n or not all(isinstance(p, str) for p in specs):
        raise BadRequest(422, f"players must be a list of {n} player specs (strings), one per seat of {game}")
    if specs.count(HUMAN) > 1:
        raise BadRequest(422, "only one seat may be 'human' (the page's own)")
    try:
        return [rules.check(p) for p in specs]
    except ValueError as e:
        raise BadRequest(422, str(e)) from None


def _new_session(data: dict, rules: PlayerRules) -> Session:
    game = str_field(data, "game", sorted(tarot_env.GAMES))
    specs = _players(data, game, rules)
    seed = int_field(data, "seed", 0, 2**63 - 1, default=None)
    seed = secrets.randbelow(2**31) if seed is None else seed
    options = options_field(data)
    pace = float_field(data, "pace", 0.0, 5.0, default=0.0)
    human = specs.index(HUMAN) if HUMAN in specs else None
    try:
        make_config(tarot_env.GAMES[game].rules_class().Config, options)
        policies = {s: rules.load(p, game, options, seed + s) for s, p in enumerate(specs) if p != HUMAN}
    except ValueError as e:
        raise BadRequest(422, str(e)) from None
    return Session(game, seed, options, specs, [label(p) for p in specs], policies, human, pace)


async def create_game(request: Request):
    t = tables(request)
    data = await body(request, {"game", "players", "seed", "options", "pace"})
    if all(p in BASELINE_NAMES for p in data.get("players") or []):  # under a millisecond: no thread hop
        s = _new_session(data, t.rules)
    else:  # a network or a search player may read its file first
        s = await run_in_threadpool(_new_session, data, t.rules)
    t.store.add(t.store.games, s.id, s)
    with s.lock:
        t.wake_bots(s)
    return view_response(s, 201)


def _seat_param(request: Request, s: Session) -> None:
    raw = request.query_params.get("seat")
    if raw is None:
        return
    if raw != str(s.human):
        raise BadRequest(403, f"seat {raw!r} is not yours: this page plays "
                              + ("no seat (a watched game)" if s.human is None else f"seat {s.human}"))


async def get_game(request: Request):
    s = session_of(request)
    _seat_param(request, s)
    return view_response(s)


async def act(request: Request):
    t, s = tables(request), session_of(request)
    data = await body(request, {"seat", "action"})
    seat = int_field(data, "seat", 0, 3)
    action = int_field(data, "action", 0, 10_000)
    with s.lock:
        s.human_move(seat, action)
        t.wake_bots(s)
    return view_response(s)


async def undo(request: Request):
    s = session_of(request)
    seat = int_field(await body(request, {"seat"}), "seat", 0, 3)
    with s.lock:
        s.undo(seat)
    return view_response(s)


async def hint(request: Request):
    t, s = tables(request), session_of(request)
    seat = int_field(await body(request, {"seat"}), "seat", 0, 3)
    with s.lock:
        s.check_turn(seat)
        obs, mask, version = s.game.observation(seat), s.game.legal_mask(), s.version
        names = [s.game.action_name(a) for a in range(s.game.num_actions)]
    probs = await run_in_threadpool(_network_probs, t.rules, s, obs, mask)
    ranked = sorted(((float(probs[a]), a) for a in range(len(mask)) if mask[a]), reverse=True)
    return JSONResponse({"version": version, "player": "ppo (the shipped network)",
                         "moves": [{"action": a, "name": names[a], "p": round(p, 4)} for p, a in ranked]})


def _network_probs(rules: PlayerRules, s: Session, obs, mask):
    try:
        net = rules.load("ppo", s.game_name, s.options, 0)
    except (ImportError, ValueError) as e:
        raise BadRequest(409, f"no hint: the shipped network cannot play this game here ({e})") from None
    return net.probs(obs[None], mask[None])[0]


async def download_log(request: Request):
    s = session_of(request)
    with s.lock:
        if not s.over:
            raise BadRequest(409, "the game is not over: its log (which holds every hand) downloads at the end")
        text = s.log_text()
    return PlainTextResponse(text, media_type="application/x-ndjson", headers={
        "Content-Disposition": f'attachment; filename="{s.game_name}-{s.seed}.jsonl"'})


async def create_replay(request: Request):
    t = tables(request)
    raw = await read_body(request, MAX_LOG, LOG_TYPES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(400, "the log is not UTF-8 text") from None
    replay = await run_in_threadpool(Replay, parse_log(text))
    rid = secrets.token_urlsafe(24)
    t.store.add(t.store.replays, rid, {"replay": replay, "last_used": time.monotonic()})
    return JSONResponse({"id": rid, **_frame(replay, 0)}, status_code=201)


def _frame(replay: Replay, k: int) -> dict:
    return {"index": k, "frames": len(replay), "text": replay.frames[k].text,
            **table_view(replay.game(k), None, replay.labels)}


async def get_replay(request: Request):
    t = tables(request)
    r = t.store.get(t.store.replays, request.path_params["rid"], "replay")
    r["last_used"] = time.monotonic()
    raw, replay = request.path_params["k"], r["replay"]
    if not (raw.isascii() and raw.isdigit()) or int(raw) >= len(replay):
        raise BadRequest(404, f"frame {raw!r} is not in this replay (0..{len(replay) - 1})")
    return JSONResponse(_frame(replay, int(raw)))


# --- errors and timing --------------------------------------------------------------------------------
async def bad_request(request: Request, exc: BadRequest):
    return JSONResponse({"error": exc.message}, status_code=exc.status)


async def http_error(request: Request, exc: HTTPException):
    return JSONResponse({"error": f"{exc.detail}: {request.method} {request.url.path}"}, status_code=exc.status_code)


async def server_error(request: Request, exc: Exception):
    return JSONResponse({"error": f"internal error ({type(exc).__name__}); the server's log has the details"},
                        status_code=500)


class ServerTiming:
    """ASGI middleware: ``Server-Timing: app;dur=MS`` on every response (time to its first byte)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()

        async def timed(message):
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - start) * 1000
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"server-timing", f"app;dur={ms:.3f}".encode())]
            await send(message)

        await self.app(scope, receive, timed)


class HostCheck:
    """ASGI middleware: a request addressed (``Host``) to a name not in ``hosts`` gets a 400 JSON error."""

    def __init__(self, app, hosts: tuple[str, ...]):
        self.app, self.hosts = app, set(hosts)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and "*" not in self.hosts:
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            name = host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0] if ":" in host else host
            if name not in self.hosts:
                response = JSONResponse({"error": f"this server answers requests to {sorted(self.hosts)} only, "
                                                  f"not to host {host!r}"}, status_code=400)
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


def create_app(rules: PlayerRules | None = None, defaults: dict | None = None, *, max_games: int = 500,
               workers: int = 8, hosts: tuple[str, ...] = LOOPBACK) -> Starlette:
    """The app; ``rules``: which players a page may seat and the search's time cap; ``hosts``: the names
    a request may be addressed to (``Host``), this machine's by default, so that a site whose name is
    made to point at 127.0.0.1 (DNS rebinding) is refused; ``("*",)`` for any."""
    routes = [
        Route("/", index),
        Route("/api/meta", meta),
        Route("/api/games", create_game, methods=["POST"]),
        Route("/api/games/{gid}", get_game),
        Route("/api/games/{gid}/action", act, methods=["POST"]),
        Route("/api/games/{gid}/undo", undo, methods=["POST"]),
        Route("/api/games/{gid}/hint", hint, methods=["POST"]),
        Route("/api/games/{gid}/log", download_log),
        Route("/api/replays", create_replay, methods=["POST"]),
        Route("/api/replays/{rid}/{k}", get_replay),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={
        BadRequest: bad_request, HTTPException: http_error, Exception: server_error})
    app.state.tables = Tables(rules or PlayerRules(), defaults or DEFAULTS, max_games, workers)
    app.add_middleware(HostCheck, hosts=hosts)
    app.add_middleware(ServerTiming)
    return app


DEFAULTS = {"game": "partita", "players": None, "seat": 0}
BASELINE_NAMES = {HUMAN, *BASELINES}
