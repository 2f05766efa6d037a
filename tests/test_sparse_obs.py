"""``make_vec(..., obs_format="sparse")``: each row's observation as its nonzero features (issue #33).

The sparse form, densified, must be the dense observation exactly (RULES.md H.1-H.5 as the env encodes
them): checked at every step of seeded random games of every game and every option set of the golden
records (``tests/golden_trajectories.py``), with the masks, seats, rewards and ends equal too; no row
ever holds more nonzeros than the game's documented width (``sparse_width``), and the padding is clean.
Then rows loaded from rules objects (the search's rollouts), a checkpoint round trip, the loop engine's
conversion, and the bad input.
"""
from __future__ import annotations

import numpy as np
import pytest

import golden_trajectories as gt
from aec_helpers import random_actions
from tarot_env.rules.millone import MilloneGame
from tarot_env.rules.ottocento import OttocentoGame
from tarot_env.rules.partita import PartitaGame
from tarot_env.vector import make_vec
from tarot_env.vector.sparse import SparseObs

GAMES = {"partita": PartitaGame, "millone": MilloneGame, "ottocento": OttocentoGame}
# every option set the batched engine takes (it refuses illegal_action other than "raise")
CASES = [(game, i) for game in sorted(gt.CASES) for i, o in enumerate(gt.CASES[game]) if "illegal_action" not in o]
IDS = [f"{game}-{gt.case_name(gt.CASES[game][i])}" for game, i in CASES]
ROWS, STEPS = 24, 500


def assert_same_rows(dense, sparse: SparseObs, where: str) -> None:
    """``sparse`` is ``dense`` exactly, within its width, each column once, with clean padding."""
    assert isinstance(sparse, SparseObs) and sparse.cols.dtype == np.int32 and sparse.vals.dtype == np.float32
    assert sparse.counts.max() <= sparse.width, where
    assert np.array_equal(sparse.dense(), dense), where
    live = np.arange(sparse.width)[None, :] < sparse.counts[:, None]
    assert not sparse.cols[~live].any() and not sparse.vals[~live].any(), f"{where}: padding"
    assert (sparse.vals[live] != 0).all(), f"{where}: a zero entry"
    assert np.array_equal(sparse.counts, (dense != 0).sum(1)), f"{where}: a column twice"


@pytest.mark.parametrize("game,case", CASES, ids=IDS)
def test_H_1_the_sparse_observation_densified_is_the_dense_one_at_every_step(game, case):
    options = gt.CASES[game][case]
    dense, sparse = (make_vec(game, ROWS, seed=case + 7, obs_format=f, **options) for f in ("dense", "sparse"))
    assert sparse.sparse_width == GAMES[game].sparse_width(sparse.config)
    a, b = dense.reset(), sparse.reset()
    rng = np.random.default_rng(case)
    ends, most = 0, 0
    long = options.get("deals_per_game", 4) > 4  # (Partita: about 54 decisions a deal; past a game's end)
    for step in range(3 * STEPS if long else STEPS):
        assert_same_rows(a.obs, b.obs, f"step {step}")
        for k in ("seat", "mask", "rewards", "step_rewards", "done"):
            assert np.array_equal(getattr(a, k), getattr(b, k)), (step, k)
        ends += int(a.done.sum())
        most = max(most, int(b.obs.counts.max()))
        act = random_actions(a.mask, rng)
        a, b = dense.step(act), sparse.step(act)
    assert ends > 0 and most > 0


def test_the_widths_are_the_documented_bounds_per_option_set():
    # the sum of each section's bound (the rules modules' SPARSE_BOUNDS), the signal sections per option
    assert PartitaGame.sparse_width(PartitaGame.Config()) == 214
    assert PartitaGame.sparse_width(PartitaGame.Config(partita_signals="bolognese3")) == 339
    assert MilloneGame.sparse_width(MilloneGame.Config()) == 268
    assert OttocentoGame.sparse_width(OttocentoGame.Config()) == 407
    assert OttocentoGame.sparse_width(OttocentoGame.Config(ott_signal_players="all")) == 506
    for cls in GAMES.values():  # narrower than the dense observation
        assert cls.sparse_width(cls.Config()) < cls.OBS.size / 2


@pytest.mark.parametrize("game", sorted(GAMES))
def test_rows_loaded_from_rules_objects_and_a_checkpoint_give_the_same_sparse_rows(game):
    # the search loads sampled worlds into rows (VecEnv.load_games / load_rows) and reads step.obs
    cls = GAMES[game]
    starts = []
    rng = np.random.default_rng(1)
    for i in range(8):
        g = cls(seed=i)
        for _ in range(int(rng.integers(0, 40))):
            legal = np.flatnonzero(g.legal_mask())
            if g.game_over or not len(legal):
                break
            g.apply_unchecked(int(rng.choice(legal)))
        if not g.game_over:
            starts.append(g)
    dense, sparse = (make_vec(game, len(starts), seed=0, episode="deal", obs_format=f) for f in ("dense", "sparse"))
    a, b = dense.load_games(starts), sparse.load_games(starts)
    assert_same_rows(a.obs, b.obs, "loaded")
    assert all(np.array_equal(b.obs.dense()[i], g.observation(g.current)) for i, g in enumerate(starts))
    saved = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in sparse.get_state().items()}
    played = []
    for _ in range(30):
        act = random_actions(a.mask, rng)
        a, b = dense.step(act), sparse.step(act)
        assert_same_rows(a.obs, b.obs, "stepped")
        played.append((act, a.obs.copy()))
    for fmt in ("sparse", "dense"):  # a state saved in one format loads into either
        again = make_vec(game, len(starts), seed=0, episode="deal", obs_format=fmt)
        again.reset()
        again.set_state({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in saved.items()})
        for act, want in played:
            out = again.step(act)
            assert np.array_equal(out.obs if fmt == "dense" else out.obs.dense(), want)


def test_the_loop_engine_and_copy_outputs_give_the_sparse_form_too():
    dense, sparse = (make_vec("ottocento", 3, seed=2, engine="loop", obs_format=f) for f in ("dense", "sparse"))
    a, b = dense.reset(), sparse.reset()
    rng = np.random.default_rng(2)
    for _ in range(40):
        assert_same_rows(a.obs, b.obs, "loop")
        act = random_actions(a.mask, rng)
        a, b = dense.step(act), sparse.step(act)
    kept = make_vec("partita", 4, seed=2, obs_format="sparse", copy_outputs=True)
    first = kept.reset()
    second = kept.step(random_actions(first.mask, rng))
    assert first.obs.cols is not second.obs.cols and not np.shares_memory(first.obs.vals, kept._sp_vals)
    assert first.obs[1:3].dense().shape == (2, PartitaGame.OBS.size)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_a_bad_obs_format_is_refused_naming_the_choices(game):
    with pytest.raises(ValueError, match=r"obs_format must be one of \['dense', 'sparse'\].*'csr'"):
        make_vec(game, 2, seed=0, obs_format="csr")
    with pytest.raises(ValueError, match="obs_format must be one of"):
        make_vec(game, 2, seed=0, obs_format=None)
    with pytest.raises(ValueError, match="needs observe=True"):
        make_vec(game, 2, seed=0, obs_format="sparse", observe=False)
    out = make_vec(game, 2, seed=0).reset()  # the default is unchanged: dense float32
    assert isinstance(out.obs, np.ndarray) and out.obs.dtype == np.float32 and out.obs.shape[1] == GAMES[game].OBS.size


def test_a_width_too_small_is_an_error_not_a_silent_cut(monkeypatch):
    # a wrong bound must fail loudly: the kernel counts past the width and the engine raises
    monkeypatch.setattr(PartitaGame, "sparse_width", staticmethod(lambda config: 20))
    venv = make_vec("partita", 4, seed=0, obs_format="sparse")
    with pytest.raises(RuntimeError, match="more than the sparse width 20"):
        venv.reset()
