"""Golden trajectories: seeded games recorded from the engine as it stood before the one-engine rewrite
(issue #33), so that any later engine can be held to the very same games, bit for bit.

What is recorded, for every game and every option set the contract and differential tests used (``CASES``):

* **AEC games** (``pettingzoo.make("aec", id, **options)``, ``reset(seed=s)``, a seeded uniformly random
  legal player; under ``illegal_action="terminate"`` every third game ends on an illegal action): at every
  step of ``agent_iter`` the acting agent, its observation and mask from ``last()``, its reward,
  termination, truncation and info (as canonical JSON), the observation and mask of **every** agent,
  ``env.state()`` and the action taken. Each step is reduced to one 64-bit digest of those parts (so a
  mismatch names its first step), and each game to one digest per part (so it names the part).
* **Batched games** (``make_vec(game, 32, seed)``, seeded random legal actions, auto-reset): at every
  step the seats, observations, masks, rewards since each seat's last decision, this step's rewards, the
  ends, the info arrays, ``final_info(row)`` of every finished row (JSON) and ``state()``; one digest per
  part per step.
* **The players' moves**: the shipped networks (``load_policy("ppo", game)``, greedy) and the heuristic,
  each playing every seat of seeded AEC games: every action they chose, stored as is.

The data live in ``tests/golden/<game>.npz`` (plain arrays, no pickle). ``tests/test_golden.py`` replays
them. To record again (only when a game's version changes on purpose, with its ``-vN`` bumped):
``python tests/golden_trajectories.py`` (about two minutes on one core).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "golden"

# option sets: the contract tests' (defaults, every optional feature) and the differential tests'
CASES: dict[str, list[dict]] = {
    "partita": [
        {},
        {"partita_signals": "bolognese3"},
        {"partita_signals": "bolognese3", "deals_per_game": 1},
        {"reward": "game", "episode": "deal", "deals_per_game": 2},
        {"first_dealer": 2, "reward_scale": 13.0},
        {"deals_per_game": 18},
        {"illegal_action": "terminate", "illegal_reward": -3.0},
    ],
    "millone": [
        {},
        {"reward": "game", "episode": "deal", "round_suits_inverted": False, "moors_double_count": False},
        {"max_hands": 1, "first_dealer": 1, "reward_scale": 13.0},
        {"illegal_action": "terminate"},
    ],
    "ottocento": [
        {},
        {"ott_signal_players": "all", "a_monte": "ask_all"},
        {"target_score": 150},
        {"episode": "deal", "ott_signal_players": "all", "ott_signal_timing": "after_top_card_played",
         "a_monte": "ask_all"},
        {"reward": "game", "max_hands": 1, "first_dealer": 2, "moors_double_count": False, "suit_min_natural": 3,
         "a_monte": "off", "ott_signal_players": "all", "reward_scale": 13.0},
        {"target_score": 20},
        {"illegal_action": "terminate"},
    ],
}
AEC_GAMES_DEFAULT = 120   # AEC games of the default options
AEC_GAMES = 30            # AEC games of every other option set
AEC_GAMES_LONG = 6        # ... of an option set whose games are long (deals_per_game=18)
VEC_ROWS, VEC_STEPS = 32, 600
POLICY_GAMES = 4          # games of each player (every seat), per game
AEC_PARTS = ("agent", "obs", "mask", "reward_done", "info", "all_obs", "state", "action")
VEC_PARTS = ("seat", "obs", "mask", "rewards", "step_rewards", "done", "info", "final_info", "state")


def case_name(options: dict) -> str:
    return ",".join(f"{k}={options[k]}" for k in sorted(options)) or "default"


def aec_game_count(options: dict) -> int:
    if not options:
        return AEC_GAMES_DEFAULT
    return AEC_GAMES_LONG if options.get("deals_per_game", 0) > 4 else AEC_GAMES


def digest(*parts) -> int:
    """64-bit digest of arrays, strings and numbers (arrays by dtype, shape and bytes)."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(f"{p.dtype.str}{p.shape}".encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
        h.update(b"|")
    return int.from_bytes(h.digest(), "little")


def canonical_json(x) -> str:
    def default(o):
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(f"not JSON: {type(o).__name__}")
    return json.dumps(x, sort_keys=True, default=default)


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _u8(x) -> np.ndarray:
    return np.asarray(x).astype(bool).astype(np.uint8)


# --- AEC games -----------------------------------------------------------------------------------------
def aec_game(game: str, options: dict, seed: int):
    """One seeded AEC game: ``(step digests uint64[T], part digests uint64[len(AEC_PARTS)])``."""
    import pettingzoo

    import tarot_env

    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game], **options)
    env.reset(seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    illegal_at = int(rng.integers(1, 120)) if options.get("illegal_action") == "terminate" and seed % 3 == 0 else -1
    steps, chains = [], [hashlib.blake2b(digest_size=8) for _ in AEC_PARTS]
    for t, agent in enumerate(env.agent_iter(max_iter=100_000)):
        obs, reward, term, trunc, info = env.last()
        mask = _u8(obs["action_mask"])
        if term or trunc:
            action = None
        else:
            legal = np.flatnonzero(mask)
            if t == illegal_at:
                action = int(np.flatnonzero(mask == 0)[0])
            else:
                action = int(legal[rng.integers(len(legal))])
        every = []
        for a in env.agents:
            o = env.observe(a)
            every += [a, _f32(o["observation"]), _u8(o["action_mask"])]
        parts = [digest(agent), digest(_f32(obs["observation"])), digest(mask),
                 digest(float(reward), bool(term), bool(trunc)), digest(canonical_json(info)), digest(*every),
                 digest(_f32(env.state())), digest(action)]
        steps.append(digest(*parts))
        for c, p in zip(chains, parts):
            c.update(p.to_bytes(8, "little"))
        env.step(action)
    return (np.array(steps, dtype=np.uint64),
            np.array([int.from_bytes(c.digest(), "little") for c in chains], dtype=np.uint64))


# --- batched games -------------------------------------------------------------------------------------
def vec_trace(game: str, options: dict, seed: int, rows: int = VEC_ROWS, steps: int = VEC_STEPS) -> np.ndarray:
    """uint64[steps + 1, len(VEC_PARTS)]: the reset and every step of a seeded batched run, part by part."""
    from tarot_env.vector import make_vec

    opts = {k: v for k, v in options.items() if k not in ("illegal_action", "illegal_reward")}
    venv = make_vec(game, rows, seed=seed, **opts)
    rng = np.random.default_rng(seed)
    out = venv.reset()
    trace = []
    for t in range(steps + 1):
        info = {k: np.asarray(v) for k, v in sorted(out.info.items())}
        done = np.flatnonzero(out.done)
        finals = canonical_json([venv.final_info(int(b)) for b in done])
        trace.append([digest(out.seat.astype(np.int64)), digest(_f32(out.obs)), digest(_u8(out.mask)),
                      digest(out.rewards.astype(np.float64)), digest(out.step_rewards.astype(np.float64)),
                      digest(_u8(out.done)),
                      digest(*[x for k, v in info.items() for x in (k, v[done].astype(
                          np.float64 if v.dtype.kind == "f" else np.int64))]),
                      digest(finals), digest(_f32(venv.state()))])
        if t < steps:
            actions = (rng.random(out.mask.shape) * out.mask).argmax(1)
            out = venv.step(actions)
    return np.array(trace, dtype=np.uint64)


# --- the players' moves --------------------------------------------------------------------------------
def player_moves(game: str, player: str, seed: int) -> np.ndarray:
    """int16[T]: every action ``player`` (all seats) takes in the default AEC game of ``seed``."""
    import pettingzoo

    import tarot_env
    from agents.players.registry import load_policy

    policy = load_policy(player, game, seed=seed)
    env = pettingzoo.make("aec", tarot_env.ENV_IDS[game])
    env.reset(seed=seed)
    moves = []
    for agent in env.agent_iter(max_iter=100_000):
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else policy.act(obs)
        if action is not None:
            moves.append(action)
        env.step(action)
    return np.array(moves, dtype=np.int16)


PLAYERS = ("ppo", "heuristic")


# --- recording -----------------------------------------------------------------------------------------
def record(game: str) -> dict[str, np.ndarray]:
    data: dict[str, np.ndarray] = {"cases": np.array([canonical_json(o) for o in CASES[game]])}
    for i, options in enumerate(CASES[game]):
        steps, parts, lengths = [], [], []
        for seed in range(aec_game_count(options)):
            s, p = aec_game(game, options, seed)
            steps.append(s)
            parts.append(p)
            lengths.append(len(s))
        data[f"aec{i}_steps"] = np.concatenate(steps)
        data[f"aec{i}_lengths"] = np.array(lengths, dtype=np.int64)
        data[f"aec{i}_parts"] = np.stack(parts)
        data[f"vec{i}"] = vec_trace(game, options, seed=100 + i)
        print(f"{game} {case_name(options)}: {len(lengths)} AEC games, {sum(lengths)} steps", flush=True)
    for player in PLAYERS:
        for seed in range(POLICY_GAMES):
            data[f"moves_{player}_{seed}"] = player_moves(game, player, seed)
    return data


def load(game: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f"{game}.npz", allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(HERE.parent))
    DATA.mkdir(exist_ok=True)
    for game in argv or sorted(CASES):
        np.savez_compressed(DATA / f"{game}.npz", **record(game))


if __name__ == "__main__":
    main(sys.argv[1:])
