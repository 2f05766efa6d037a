"""A scripted demo: one seeded game (Partita, Ottocento or Millone) with random legal play through the
PettingZoo loop.

    tarot-demo --seed 0                          # the table at the start of every deal and the scores
    python -m tarot_env.demo --game millone --seed 3 --every-move

Every finished deal (hand) prints one line: its score per side and the short numbers of its record (Partita's
card ``points``, Ottocento's ``declared`` and ``combo`` points …); the last names each side's seats and the winner.
"""
from __future__ import annotations

import argparse

import numpy as np
import pettingzoo

import tarot_env
from tarot_env.commands import HelpFormatter, add_version, note_cold_cache, run_command


def deal_line(result: dict) -> str:
    """One finished deal's history entry in one line: ``scores`` first, then the short entries."""
    def short(v) -> bool:
        return isinstance(v, (bool, int, str)) or (
            isinstance(v, list) and len(v) <= 4 and all(isinstance(x, (int, str)) for x in v))

    rest = [f"{k} {v}" for k, v in result.items() if k not in ("scores", "discards") and short(v)]
    return f"scores {result['scores']}" + (f" ({', '.join(rest)})" if rest else "")


def sides(game) -> str:
    """``team 0 = player_0 + player_2, team 1 = player_1 + player_3`` from the game's ``team_of``."""
    return ", ".join(f"team {t} = " + " + ".join(f"player_{s}" for s in range(game.num_players)
                                                 if game.team_of[s] == t) for t in range(2))


def play(game: str = "partita", seed: int = 0, every_move: bool = False) -> dict:
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], render_mode="ansi")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = {a: 0.0 for a in env.possible_agents}
    deals_seen = -1
    for agent in env.agent_iter():
        obs, reward, term, trunc, _info = env.last()
        returns[agent] += reward
        if term or trunc:
            env.step(None)
            continue
        g = env.unwrapped.game
        if every_move or len(g.history) != deals_seen:
            if len(g.history) != deals_seen and g.history:
                print(f"--- deal {len(g.history)} scored: {deal_line(g.history[-1])}")
            deals_seen = len(g.history)
            print(env.render())
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(rng.choice(legal)))
    g = env.unwrapped.game
    print(f"--- last deal scored: {deal_line(g.history[-1])}")
    print(f"final scores ({sides(g)}): {g.scores.tolist()}; "
          f"winner: {'draw' if g.winner == -1 else f'team {g.winner}'}")
    return {"scores": g.scores.tolist(), "winner": g.winner, "returns": returns}


def main(argv: list[str] | None = None) -> int:
    """``tarot-demo``: 0, or 130 after Ctrl-C (one line, no traceback)."""
    ap = argparse.ArgumentParser(prog="tarot-demo", description="Play one seeded random game and show the table.",
                                 formatter_class=HelpFormatter)
    add_version(ap)
    ap.add_argument("--game", default="partita", choices=sorted(tarot_env.ENV_IDS), help="the game")
    ap.add_argument("--seed", type=int, default=0, help="the seed of the game")
    ap.add_argument("--every-move", action="store_true", help="render before every decision")
    args = ap.parse_args(argv)

    def body() -> int:
        note_cold_cache()
        play(args.game, args.seed, args.every_move)
        return 0

    return run_command("tarot-demo", body)


if __name__ == "__main__":
    raise SystemExit(main())
