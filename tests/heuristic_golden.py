"""Golden decisions of the heuristic (``agents.players.baselines.HeuristicPolicy``): positions and the action it
chose at each, recorded before its per-row Python decision code was replaced by the compiled batched
kernels (issue #33, point 3: "same decisions as today's heuristic").

For every game and several option sets (``CASES``), ``make_vec(game, 32, seed)`` plays seeded games in
which each row's moves are a mix of the heuristic's and a uniformly random legal player's (row ``r``
follows the heuristic with probability ``MIX[r % 4]``), so the positions cover what the heuristic meets
against itself and against weak play: every phase (discards, *a monte*, declarations, leads, follows,
signals, the partner's signals answered). At every step the (observation, mask) of each row and the
heuristic's action there are recorded (positions with one legal action only 1 in 10 times).

Stored in ``tests/golden/heuristic_<game>.npz`` (``np.savez_compressed``, plain arrays, no pickle), the
observation split losslessly: the columns holding only 0 and 1 as packed bits (``bits``, columns
``bin_cols``), the others (columns ``dense_cols``) as codes
(``dense_codes``) into a table of their float32 values (``dense_values``); the mask as packed bits;
``action``, ``phase`` (the phase section's argmax) and ``case`` (index into ``cases``, the option sets as
JSON) per position. :func:`load` rebuilds ``obs`` float32[n, O] and ``mask`` bool[n, A] exactly.
``tests/test_baselines.py`` checks the heuristic still picks every recorded action.

To record again (only on purpose, e.g. a game's observation changes): ``python tests/heuristic_golden.py``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "golden"
ROWS = 32
MIX = (0.0, 0.4, 0.8, 1.0)  # probability that a row plays the heuristic's move, by row % 4
KEEP_FORCED = 0.1  # share of the positions with a single legal action that are kept

# game -> list of (option set, positions to record)
CASES: dict[str, list[tuple[dict, int]]] = {
    "partita": [({}, 10_000), ({"partita_signals": "bolognese3"}, 14_000)],
    "millone": [({}, 16_000), ({"round_suits_inverted": False}, 8_000)],
    "ottocento": [({}, 8_000), ({"a_monte": "ask_all", "ott_signal_players": "all"}, 10_000),
                  ({"ott_signal_players": "all", "ott_signal_timing": "after_top_card_played",
                    "a_monte": "off"}, 6_000)],
}


def path(game: str) -> Path:
    return DATA / f"heuristic_{game}.npz"


def record_case(game: str, options: dict, count: int, seed: int):
    """(obs, mask, action) of ``count`` positions of seeded batched games of ``game`` under ``options``."""
    import tarot_env
    from agents.players.baselines import HeuristicPolicy

    venv = tarot_env.make_vec(game, ROWS, seed=seed, **options)
    h = HeuristicPolicy(game)
    rng = np.random.default_rng(seed)
    follow = np.array([MIX[r % len(MIX)] for r in range(ROWS)])
    out = venv.reset()
    obs, mask, act = [], [], []
    n = 0
    while n < count:
        a_h = h.act_batch(out.obs, out.mask)
        a_r = (rng.random(out.mask.shape) * out.mask).argmax(1)
        keep = (out.mask.sum(1) > 1) | (rng.random(ROWS) < KEEP_FORCED)
        keep &= np.cumsum(keep) <= count - n
        obs.append(out.obs[keep].copy())
        mask.append(out.mask[keep].copy())
        act.append(a_h[keep])
        n += int(keep.sum())
        out = venv.step(np.where(rng.random(ROWS) < follow, a_h, a_r))
    return np.concatenate(obs), np.concatenate(mask), np.concatenate(act)


def record(game: str) -> dict[str, np.ndarray]:
    from tarot_env.rules import millone, ottocento, partita

    layout = {"partita": partita, "millone": millone, "ottocento": ottocento}[game].OBS
    parts = [record_case(game, opts, count, seed=1000 * k + 7) for k, (opts, count) in enumerate(CASES[game])]
    obs = np.concatenate([p[0] for p in parts]).astype(np.float32)
    mask = np.concatenate([p[1] for p in parts]).astype(bool)
    action = np.concatenate([p[2] for p in parts])
    case = np.concatenate([np.full(len(p[2]), k, np.int8) for k, p in enumerate(parts)])
    binary = ((obs == 0) | (obs == 1)).all(0)
    values, codes = np.unique(obs[:, ~binary], return_inverse=True)
    data = {
        "bits": np.packbits(obs[:, binary] == 1, axis=1),
        "bin_cols": np.flatnonzero(binary).astype(np.int16),
        "dense_values": values.astype(np.float32),
        "dense_codes": codes.reshape(len(obs), -1).astype(np.uint8 if len(values) <= 256 else np.uint16),
        "dense_cols": np.flatnonzero(~binary).astype(np.int16),
        "obs_size": np.int64(obs.shape[1]),
        "mask_bits": np.packbits(mask, axis=1),
        "num_actions": np.int64(mask.shape[1]),
        "action": action.astype(np.int16),
        "phase": obs[:, layout.offsets["phase"]].argmax(1).astype(np.int8),
        "case": case,
        "cases": np.array([json.dumps(opts, sort_keys=True) for opts, _ in CASES[game]]),
    }
    o, m = unpack(data)
    assert np.array_equal(o, obs) and np.array_equal(m, mask)  # lossless
    return data


def unpack(data) -> tuple[np.ndarray, np.ndarray]:
    """``obs`` float32[n, O] and ``mask`` bool[n, A] of a recording (the npz or :func:`record`'s dict)."""
    n, size = len(data["action"]), int(data["obs_size"])
    obs = np.zeros((n, size), np.float32)
    cols = data["bin_cols"].astype(np.int64)
    obs[:, cols] = np.unpackbits(data["bits"], axis=1, count=len(cols))
    obs[:, data["dense_cols"].astype(np.int64)] = data["dense_values"][data["dense_codes"].astype(np.int64)]
    mask = np.unpackbits(data["mask_bits"], axis=1, count=int(data["num_actions"])).astype(bool)
    return obs, mask


def load(game: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs, mask, action)`` recorded for ``game``."""
    with np.load(path(game), allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    obs, mask = unpack(data)
    return obs, mask, data["action"].astype(np.int64)


def main(games: list[str]) -> None:
    DATA.mkdir(exist_ok=True)
    for game in games:
        data = record(game)
        np.savez_compressed(path(game), **data)
        phases, counts = np.unique(data["phase"], return_counts=True)
        print(f"{path(game).relative_to(HERE.parent)}: {len(data['action'])} positions, "
              f"{path(game).stat().st_size / 1e6:.2f} MB, by phase {dict(zip(phases.tolist(), counts.tolist()))}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main(sys.argv[1:] or ["partita", "millone", "ottocento"])
