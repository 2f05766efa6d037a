"""A search's heuristic rollouts all in compiled code (``agents.players.heuristic_playouts``, issue #33): the same
values, world by world and action by action, as the rollouts that step the batched engine from Python and
hand the heuristic the engine's whole observation (``EngineRollouts(game, stepped=True)``): the heuristic
reads from the row's state exactly the sections it reads from the observation, so it makes the same moves
(RULES.md Part H: only the acting seat's view), and the deal is scored the same (D.5; a claim at the next
deal, MIL-3, is not played; PAR-6: Partita's deal)."""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from agents.players.baselines import HeuristicPolicy
from agents.players.heuristic_playouts import PLAYOUTS, heuristic_playouts
from agents.players.pimc import EngineRollouts
from tarot_env.sampler import Determinizer
from test_vector_load_games import _phases, positions

CONFIGS = [("millone", {}), ("millone", {"round_suits_inverted": False, "moors_double_count": False}),
           ("partita", {}), ("partita", {"partita_signals": "bolognese3"}),
           ("ottocento", {}), ("ottocento", {"a_monte": "ask_all", "ott_signal_players": "all"}),
           ("ottocento", {"ott_signal_timing": "after_top_card_played", "ott_signal_players": "eldest_only"})]


def _values(game, g, rows, stepped: bool) -> np.ndarray:
    er = EngineRollouts(game, stepped=stepped)
    return er.values_rows(rows, g.config, g.legal_actions(), HeuristicPolicy(game), g.team_of[g.current])


@pytest.mark.parametrize("game,options", CONFIGS)
def test_D_5_H_compiled_heuristic_rollouts_give_the_stepped_rollouts_values(game, options):
    """At seeded positions of every phase, 16 sampled worlds x every legal action: equal values."""
    cfg = tarot_env.make_vec(game, 1, **options).config
    distinct, rows_checked = set(), 0
    for i, g in enumerate(positions(game, cfg, 3 * len(_phases(game, cfg)), seed=33, max_moves=120)):
        if len(g.legal_actions()) < 2:
            continue
        rows = Determinizer(g, g.current).sample_rows(16, np.random.default_rng(i))
        compiled = _values(game, g, rows, stepped=False)
        stepped = _values(game, g, rows, stepped=True)
        np.testing.assert_array_equal(compiled, stepped, err_msg=f"position {i} ({g.phase.name})")
        distinct |= set(compiled.ravel().tolist())
        rows_checked += compiled.size
    assert len(distinct) > 20 and rows_checked > 500  # real deal scores over many rollouts


def test_heuristic_playouts_clear_errors():
    """A game without compiled heuristic playouts, rows of other options, or a wrong number of first actions
    (Millone, Ottocento)."""
    g = positions("millone", tarot_env.make_vec("millone", 1).config, 1, seed=1)[0]
    tables = HeuristicPolicy("millone").info.tables
    with pytest.raises(ValueError, match="no compiled heuristic playouts"):
        heuristic_playouts("tarocco", g.row.tiled(2), [0, 0], [0, 0], g.config, tables)
    with pytest.raises(ValueError, match="one first action and team per row"):
        heuristic_playouts("millone", g.row.tiled(2), [0], [0, 0], g.config, tables)
    other = tarot_env.make_vec("millone", 1, round_suits_inverted=False).config
    with pytest.raises(ValueError, match="these rows play"):
        heuristic_playouts("millone", g.row.tiled(2), [0, 0], [0, 0], other, tables)
    g = positions("ottocento", tarot_env.make_vec("ottocento", 1).config, 1, seed=1)[0]
    other = tarot_env.make_vec("ottocento", 1, a_monte="ask_all").config
    with pytest.raises(ValueError, match="these rows play"):
        heuristic_playouts("ottocento", g.row.tiled(2), [0, 0], [0, 0], other, HeuristicPolicy("ottocento").info.tables)
    with pytest.raises(ValueError, match="one first action and team per row"):
        heuristic_playouts("ottocento", g.row.tiled(2), [0], [0, 0], g.config, HeuristicPolicy("ottocento").info.tables)
    assert set(PLAYOUTS) == {"partita", "millone", "ottocento"}
