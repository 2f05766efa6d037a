"""``tarot-web``: the command line (its ``--help`` and argument errors import neither torch nor the rules).

``tarot-web --game partita --players human,heuristic`` serves the page on http://127.0.0.1:8000/
(docs/web.md).
"""
from __future__ import annotations

import argparse
import sys

from tarot_env.commands import HelpFormatter, add_version, run_command
from tarot_env.games import GAMES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="tarot-web", description="Play Partita, Millone or Ottocento in the browser.",
                                formatter_class=HelpFormatter)
    add_version(p)
    p.add_argument("--game", default="partita", choices=sorted(GAMES),
                   help="the page's first game (default: partita)")
    p.add_argument("--players", default="human,heuristic",
                   help="one spec per seat, comma-separated, 'human' for yours; a short list is filled with its "
                        "last spec (default: human,heuristic). Specs: random, heuristic, ppo, pimc[:...], "
                        "ppo+pimc[:...], and checkpoint paths given here")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    p.add_argument("--think-time", type=float, default=2.0,
                   help="seconds a searching player may think per move (default: 2)")
    p.add_argument("--max-games", type=int, default=500, help="games held at once (default: 500)")
    p.add_argument("--no-warm", action="store_true",
                   help="do not compile the rules of the three games before serving")
    ns = p.parse_args(argv)
    if not 0 < ns.think_time <= 60:
        p.error(f"--think-time must be in (0, 60] seconds, got {ns.think_time}")
    if not 1 <= ns.port <= 65535:
        p.error(f"--port must be 1..65535, got {ns.port}")
    return ns


def table_players(spec: str, game: str) -> list[str]:
    """``--players`` as one spec per seat of ``game``."""
    specs = [p.strip() for p in spec.split(",") if p.strip()]
    n = GAMES[game].players
    if not specs or len(specs) > n:
        raise ValueError(f"--players needs 1..{n} specs for {game}, got {len(specs)}")
    return specs + [specs[-1]] * (n - len(specs))


def warm() -> None:
    """Compile (or load from the cache) the rules of every game: the first one takes about 30 s."""
    from agents.play.human import new_game

    for game in GAMES:
        g = new_game(game, 0)
        g.apply(g.legal_actions()[0])


def player_rules(ns: argparse.Namespace):
    """The table's specs and what a page may seat (a ``PlayerRules``): ``ValueError`` for a spec that is
    not a player."""
    from agents.players.players import load_player

    from .players import HUMAN, PlayerRules, is_search, named_players

    specs = table_players(ns.players, ns.game)
    if specs.count(HUMAN) > 1:
        raise ValueError("--players: only one seat may be 'human'")
    extra = tuple(p for p in specs if p != HUMAN and p not in named_players() and not is_search(p))
    rules = PlayerRules(think_time=ns.think_time, extra=extra)
    for p in specs:
        rules.check(p)
    for p in extra:
        load_player(p, ns.game)  # a checkpoint of another game, or not one at all, is refused now
    return specs, rules


def main(argv: list[str] | None = None) -> int:
    """The ``tarot-web`` console script (Ctrl-C ends it with one line and status 130)."""
    ns = parse_args(argv)
    return run_command("tarot-web", lambda: serve(ns))


def serve(ns: argparse.Namespace) -> int:
    try:
        specs, rules = player_rules(ns)
    except ValueError as e:
        print(f"tarot-web: error: {e}", file=sys.stderr)
        return 2
    import uvicorn

    from .app import LOOPBACK, create_app
    from .players import HUMAN

    if ns.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"tarot-web: warning: binding {ns.host}: anyone who can reach it can start games here")
    if not ns.no_warm:
        print("tarot-web: loading the rules of the three games (the first run compiles them, about 30 s)")
        warm()
    hosts = LOOPBACK if ns.host in LOOPBACK else ("*",)
    app = create_app(rules, {"game": ns.game, "players": specs, "seat": specs.index(HUMAN) if HUMAN in specs else -1},
                     max_games=ns.max_games, hosts=hosts)
    print(f"tarot-web: open http://{ns.host}:{ns.port}/")
    uvicorn.run(app, host=ns.host, port=ns.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
