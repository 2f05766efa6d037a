"""Baselines (random, heuristic) behind the Policy interface, and load_policy(path_or_name, game)."""
from __future__ import annotations

import numpy as np
import pytest

import tarot_env
from agents.evaluation.evaluate import duplicate_eval
from agents.players.baselines import HeuristicPolicy, RandomPolicy, make_baseline
from agents.players.policy import Policy
from agents.players.registry import load_policy
from agents.spec import make_spec
from tarot_env.cards import TRUMP
from tarot_env.engine import trick_winner

GAMES = list(tarot_env.GAMES)


def make_checkpoint(path, game="partita", **meta_over):
    """A small, valid checkpoint (random weights) in agents/players/policy.py's format."""
    from agents.players.network import ActorCritic
    from agents.players.policy import save_checkpoint

    spec = make_spec(game)
    model = ActorCritic(spec.obs_size, spec.num_actions, [16], critic="shared")
    meta = {"game": game, "env_id": spec.env_id, "env_version": spec.version, "obs_size": spec.obs_size,
            "state_size": spec.state_size, "num_actions": spec.num_actions,
            "config": {"hidden": [16], "critic": "shared", "game_options": {}}, "update": 0, "step": 0}
    meta.update(meta_over)
    save_checkpoint(path, {"meta": meta, "model": model.state_dict()})
    return path


def decisions(game: str, policy: Policy, seed: int, limit: int = 400):
    """Play the first deal of ``game`` with ``policy`` at every seat; yield (g, seat, obs, mask, action)."""
    g = make_spec(game).new_game(seed)
    n = 0
    while not g.history and n < limit:
        seat = g.current
        obs, mask = g.observation(seat), g.legal_mask()
        a = policy.act(obs, mask)
        yield g, seat, obs, mask, a
        g.apply(a)  # checked: raises on an illegal action
        n += 1


# --- the interface contract -------------------------------------------------------------------------

@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("name", ["random", "heuristic"])
def test_policy_contract_act_and_act_batch_give_legal_ints(game, name):
    pol = make_baseline(name, game, seed=0)
    assert isinstance(pol, Policy)
    rows_o, rows_m = [], []
    for g, seat, obs, mask, a in decisions(game, pol, seed=1):
        assert isinstance(a, int) and mask[a]
        rows_o.append(obs)
        rows_m.append(mask)
    assert len(rows_o) > 20
    acts = pol.act_batch(np.stack(rows_o), np.stack(rows_m))
    assert acts.shape == (len(rows_o),) and np.issubdtype(acts.dtype, np.integer)
    assert np.stack(rows_m)[np.arange(len(acts)), acts].all()
    # act() accepts the env's observation dict too
    assert rows_m[0][pol.act({"observation": rows_o[0], "action_mask": rows_m[0].astype(np.int8)})]


@pytest.mark.parametrize("game", GAMES)
def test_heuristic_is_deterministic_and_batch_equals_single(game):
    pol = HeuristicPolicy(game)
    data = [(o, m, a) for _, _, o, m, a in decisions(game, pol, seed=5)]
    again = pol.act_batch(np.stack([d[0] for d in data]), np.stack([d[1] for d in data]))
    assert again.tolist() == [d[2] for d in data]


@pytest.mark.parametrize("game", GAMES)
def test_heuristic_makes_the_recorded_decisions(game):
    """tests/golden/heuristic_<game>.npz (tests/heuristic_golden.py): positions of seeded games under several
    option sets, every phase, and the action the heuristic chose there before its decisions were compiled
    (issue #33): the compiled batched kernels choose exactly the same."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from heuristic_golden import load

    obs, mask, action = load(game)
    assert len(action) >= 20_000
    got = HeuristicPolicy(game).act_batch(obs, mask)
    bad = np.flatnonzero(got != action)
    assert len(bad) == 0, f"{len(bad)} of {len(action)} decisions differ, first at {bad[:5]}: " \
                          f"{got[bad[:5]].tolist()} != {action[bad[:5]].tolist()}"
    # the same, a row at a time and with obs not contiguous (act_batch takes any float array)
    some = np.linspace(0, len(action) - 1, 50).astype(int)
    assert [HeuristicPolicy(game).act(obs[i], mask[i]) for i in some] == action[some].tolist()
    wide = np.zeros((len(some), obs.shape[1] + 1), np.float64)
    wide[:, 1:] = obs[some]
    assert HeuristicPolicy(game).act_batch(wide[:, 1:], mask[some]).tolist() == action[some].tolist()


def test_heuristic_refuses_bad_shapes_and_empty_masks():
    pol = HeuristicPolicy("partita")
    spec = make_spec("partita")
    with pytest.raises(ValueError, match="1034"):
        pol.act_batch(np.zeros((1, 700), np.float32), np.ones((1, 57), bool))
    with pytest.raises(ValueError, match="no legal action"):
        pol.act_batch(np.zeros((1, spec.obs_size), np.float32), np.zeros((1, 57), bool))
    with pytest.raises(ValueError, match="no heuristic for game"):
        HeuristicPolicy("chess")
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline("minimax", "partita")


# --- tactics (checked on every decision of many deals) -----------------------------------------------

@pytest.mark.parametrize("game", GAMES)
def test_heuristic_last_to_play_takes_a_trick_it_can_win_unless_partner_holds_it(game):
    pol = HeuristicPolicy(game)
    checked = 0
    for seed in range(12):
        for g, seat, obs, mask, a in decisions(game, pol, seed):
            if g.phase.name != "PLAY" or len(g.trick) != g.num_players - 1 or a >= g.pack.size:
                continue
            winner_now = trick_winner(g.pack, g.trick)
            if g.team_of[winner_now] == g.team_of[seat]:
                continue
            can_win = [c for c in np.flatnonzero(mask[:g.pack.size])
                       if trick_winner(g.pack, g.trick + [(seat, int(c))]) == seat]
            if can_win:
                checked += 1
                assert trick_winner(g.pack, g.trick + [(seat, a)]) == seat, (game, seed, g.trick, a)
    assert checked > 10


def test_partita_heuristic_smears_points_on_partner_trick_and_saves_points_with_the_fool():
    """Last to play: partner holds the trick -> give the most points (a master trump is kept);
    cannot win and every card would give points away -> play the Fool (PAR-5.3: it stays with us)."""
    pol = HeuristicPolicy("partita")
    value, suit = pol.info.pts, pol.info.suit
    smears = 0
    for seed in range(40):
        for g, seat, obs, mask, a in decisions("partita", pol, seed):
            if g.phase.name != "PLAY" or len(g.trick) != 3:
                continue
            legal = [int(c) for c in np.flatnonzero(mask[:54]) if c != g.pack.excuse]
            if not legal:
                continue
            if trick_winner(g.pack, g.trick) == g.partner(seat):
                out = g.hands.any(0) & ~g.hands[seat]
                if seat != g.dealer:
                    out |= g.discards[g.dealer] & ~g.public_discards
                strength, equal = g.pack.strength, g.pack.equal_group
                master = [c for c in legal if suit[c] == TRUMP and not (out & (suit == TRUMP) & (
                    (strength > strength[c]) | (equal & (strength == strength[c])))).any()]
                cand = [c for c in legal if c not in master] or legal
                smears += 1
                assert value[a] == max(value[c] for c in cand), (seed, g.trick, a)
            elif not any(trick_winner(g.pack, g.trick + [(seat, c)]) == seat for c in legal) \
                    and mask[g.pack.excuse] and min(value[c] for c in legal) > 0:
                assert a == g.pack.excuse
    assert smears > 10


def test_ottocento_heuristic_declares_every_scoring_card():
    from tarot_env.rules.ottocento import declarable_cards

    pol = HeuristicPolicy("ottocento")
    declared_any = 0
    for seed in range(6):
        start = {}
        for g, seat, obs, mask, a in decisions("ottocento", pol, seed):
            if g.phase.name == "DECLARE" and seat not in start:
                start[seat] = declarable_cards(g.hands[seat])
            if g.phase.name == "PLAY":  # the declarations are over: each player laid down M(hand)
                assert len(start) == 4
                for s, m in start.items():
                    assert (g.declared[s] == m).all()
                    declared_any += int(m.any())
                break
    assert declared_any > 0


# --- strength: the heuristic beats random play clearly ------------------------------------------------

@pytest.mark.parametrize("game,deals", [("partita", 40), ("ottocento", 16), ("millone", 16)])
def test_heuristic_beats_random_on_duplicate_deals(game, deals):
    r = duplicate_eval(make_spec(game), HeuristicPolicy(game), RandomPolicy(7), deals=deals, seed=11)
    assert r.mean_margin - r.ci95 > 0, str(r)
    assert r.win_share > 0.6, str(r)


# --- load_policy -----------------------------------------------------------------------------------------

def test_load_policy_resolves_baseline_names():
    assert isinstance(load_policy("heuristic", "millone"), HeuristicPolicy)
    assert isinstance(load_policy("random", "partita", seed=3), RandomPolicy)
    with pytest.raises(ValueError, match="neither a baseline"):
        load_policy("no/such/file.pt", "partita")
    with pytest.raises(ValueError, match="unknown game"):
        load_policy("random", "bridge")


def test_load_policy_checkpoint_plays_legally(tmp_path):
    path = make_checkpoint(tmp_path / "p.pt", "partita")
    pol = load_policy(str(path), "partita")
    for g, seat, obs, mask, a in decisions("partita", pol, seed=2):
        assert mask[a]


def test_load_policy_refuses_a_checkpoint_of_another_game(tmp_path):
    path = make_checkpoint(tmp_path / "p.pt", "partita")
    with pytest.raises(ValueError, match=r"trained for 'partita'.*not for 'millone'"):
        load_policy(str(path), "millone")


def test_load_policy_refuses_mismatched_observation_or_action_sizes(tmp_path):
    path = make_checkpoint(tmp_path / "old.pt", "partita", obs_size=817)
    with pytest.raises(ValueError, match=r"obs_size=817.*obs_size=1034"):
        load_policy(str(path), "partita")
    path = make_checkpoint(tmp_path / "old2.pt", "partita", num_actions=56)
    with pytest.raises(ValueError, match=r"num_actions=56.*num_actions=57"):
        load_policy(str(path), "partita")


def test_load_policy_refuses_a_corrupt_file(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        load_policy(str(bad), "partita")


def test_heuristic_answers_the_partners_lead_trumps_signal_and_signals_itself():
    """PAR-7.1 / OTT-8.1 with signals on: after the partner's LEAD_TRUMPS, a heuristic leader holding a
    trump leads one; the heuristic gives signals itself (VOID, LEAD_TRUMPS)."""
    spec = make_spec("partita", {"partita_signals": "bolognese3"})
    pol = HeuristicPolicy("partita")
    answered = given = 0
    for seed in range(30):
        g = spec.new_game(seed)
        while not g.history:
            seat = g.current
            a = pol.act(g.observation(seat), g.legal_mask())
            if a >= 54:
                given += 1
            elif g.phase.name == "PLAY" and not g.trick and any(
                    s == g.partner(seat) and k == 1 for s, c, k in g.signals) and \
                    (g.hands[seat] & (g.pack.suit == TRUMP)).any():
                answered += 1
                assert g.pack.suit[a] == TRUMP, (seed, g.signals, a)
            g.apply(a)
    assert given > 5 and answered > 0


def test_loss_spread_replays_the_same_deals_against_differently_seeded_random_players():
    """scripts/loss_spread.py: run k is exactly agents.evaluation.evaluate's result against RandomPolicy(1000 + k)
    on the same deals, and the per-deal loss shares summarise those runs."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from loss_spread import loss_spread

    out = loss_spread("partita", "heuristic", deals=12, seed=3, opponent_seeds=3)
    spec = make_spec("partita")
    runs = [duplicate_eval(spec, load_policy("heuristic", "partita"), RandomPolicy(1000 + k), deals=12, seed=3)
            for k in range(3)]
    assert out["won_per_run"] == [r.win_share for r in runs]
    lost = np.array([r.margins <= 0 for r in runs])
    assert out["mean_loss_share"] == pytest.approx(lost.mean())
    assert out["deals_always_lost"] == pytest.approx(lost.all(axis=0).mean())
    assert out["deals_never_lost"] == pytest.approx((~lost.any(axis=0)).mean())
    assert sum(out["loss_share_histogram"].values()) == 12
    with pytest.raises(ValueError, match="opponent_seeds must be at least 1"):
        loss_spread("partita", "heuristic", deals=12, seed=3, opponent_seeds=0)
