"""The one-row game (the AEC env's game) calls its row's kernels directly once numba has typed a call
(``tarot_env.engine.row_call``): an ``out`` buffer from outside that the kernel cannot take as it is gets
the same observation, copied in; games of other options in the same process keep their own compiled calls."""
import numpy as np
import pytest

import tarot_env

GAMES = {game: g.rules_class() for game, g in tarot_env.GAMES.items()}


def _played(G, seed, config=None, moves=25):
    g = G(config, seed=seed) if config is not None else G(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    return g


@pytest.mark.parametrize("game", list(GAMES))
def test_H_1_observation_into_any_out_buffer_is_the_same_observation(game):
    g = _played(GAMES[game], 3)
    want = g.observation(g.current)
    size = want.shape[0]
    strided = np.zeros(2 * size, dtype=np.float32)[::2]  # not contiguous
    wide = np.zeros(size, dtype=np.float64)  # another dtype
    readonly = np.zeros(size, dtype=np.float32)
    own = np.zeros(size, dtype=np.float32)
    for out in (strided, wide, own):
        got = g.observation(g.current, out=out)
        assert got is out and np.array_equal(got, want), type(out)
    readonly.setflags(write=False)
    with pytest.raises(ValueError):
        g.observation(g.current, out=readonly)
    assert np.array_equal(g.observation(g.current), want)  # nothing changed in the game


@pytest.mark.parametrize("game", list(GAMES))
def test_games_of_other_options_in_one_process_play_their_own_rules(game):
    """Two games of other options stepped in turn: at every step each one's observation and mask are what
    the batched engine (which goes through numba's dispatcher at every call) computes for that state."""
    G = GAMES[game]
    options = {"partita": {"partita_signals": "bolognese3", "deals_per_game": 2}, "millone": {"max_hands": 2},
               "ottocento": {"target_score": 300, "max_hands": 3, "ott_signal_players": "all"}}[game]
    Config = type(G().config)
    pairs = []
    for config in (None, Config(**options)):
        g = G(config, seed=5) if config is not None else G(seed=5)
        pairs.append((g, tarot_env.make_vec(game, 1, **(options if config is not None else {}))))
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(150):
        for g, venv in pairs:
            if g.game_over:
                continue
            step = venv.load_games([g])
            assert np.array_equal(step.obs[0], g.observation(g.current))
            assert np.array_equal(step.mask[0], g.legal_mask())
            legal = g.legal_actions()
            g.apply(legal[rng.integers(len(legal))])
            checked += 1
    assert checked > 250
