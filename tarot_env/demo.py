"""A scripted demo: one seeded Partita game with random legal play through the PettingZoo loop.

    tarot-demo --seed 0            # prints the table at the start of every deal and the scores
    python -m tarot_env.demo --game partita --seed 3 --every-move
"""
from __future__ import annotations

import argparse

import numpy as np
import pettingzoo

import tarot_env


def play(game: str = "partita", seed: int = 0, every_move: bool = False) -> dict:
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], render_mode="ansi")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = {a: 0.0 for a in env.possible_agents}
    deals_seen = -1
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        returns[agent] += reward
        if term or trunc:
            env.step(None)
            continue
        g = env.unwrapped.game
        if every_move or len(g.history) != deals_seen:
            if len(g.history) != deals_seen and g.history:
                print(f"--- deal {len(g.history)} scored: {g.history[-1]['scores']} (points {g.history[-1]['points']})")
            deals_seen = len(g.history)
            print(env.render())
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(rng.choice(legal)))
    g = env.unwrapped.game
    print(f"--- last deal scored: {g.history[-1]['scores']} (points {g.history[-1]['points']})")
    print(f"final scores (team 0 = player_0 + player_2, team 1 = player_1 + player_3): {g.scores.tolist()}; "
          f"winner: {'draw' if g.winner == -1 else f'team {g.winner}'}")
    return {"scores": g.scores.tolist(), "winner": g.winner, "returns": returns}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Play one seeded random game and show the table.")
    ap.add_argument("--game", default="partita", choices=sorted(tarot_env.ENV_IDS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every-move", action="store_true", help="render before every decision")
    args = ap.parse_args(argv)
    play(args.game, args.seed, args.every_move)


if __name__ == "__main__":
    main()
