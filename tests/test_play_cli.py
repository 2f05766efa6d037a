"""Human play in the terminal, driven by scripted input; game logs and their replay."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.play.human import (
    main,
    new_game,
    parse_choice,
    play_session,
    read_log,
    replay,
    why_illegal,
)
from agents.players.baselines import HeuristicPolicy

ROOT = Path(__file__).resolve().parent.parent


def scripted(lines):
    """An input() stand-in: the given lines, then '1' forever (the first legal move)."""
    it = iter(lines)

    def fn(prompt=""):
        return next(it, "1")
    return fn


def run_cli(argv, lines=()):
    out: list[str] = []
    rc = main(argv, input_fn=scripted(lines), out=out.append)
    return rc, "\n".join(out)


@pytest.mark.parametrize("game,opts", [("partita", ["-o", "deals_per_game=1"]),
                                       ("ottocento", ["-o", "target_score=50"]),
                                       ("millone", ["-o", "max_hands=1"])])
def test_a_whole_game_by_numbers_with_bad_input_re_asked(game, opts):
    rc, text = run_cli(["--game", game, "--seat", "1", "--seed", "4", *opts], ["", "zz", "0", "999", "help", "table"])
    assert rc == 0
    assert "not accepted: empty input" in text
    assert "'zz' is not a card or a move" in text
    assert "0 is not in the list" in text and "999 is not in the list" in text
    assert "type the number of a move" in text  # help
    assert "your hand:" in text and "legal moves: 1)" in text
    assert f"{'deal' if game == 'partita' else 'hand'} 1 over" in text and "game over" in text


def test_the_player_sees_only_its_own_hand():
    rc, text = run_cli(["--game", "partita", "--seat", "2", "--seed", "1", "-o", "deals_per_game=1"])
    first_view = text.split("legal moves")[0]
    own = [ln for ln in first_view.splitlines() if ln.strip().startswith("player_")]
    assert any("(you)" in ln and " — " in ln for ln in own)
    assert all(" — " not in ln for ln in own if "(you)" not in ln)


def test_names_are_accepted_and_illegal_names_get_the_reason():
    g = new_game("partita", 0, {"deals_per_game": 1})
    # play to the first moment someone must follow suit while holding other cards
    pol = HeuristicPolicy("partita")
    while True:
        legal = [int(a) for a in np.flatnonzero(g.legal_mask())]
        if g.phase.name == "PLAY" and g.trick and len(legal) < g.hand_sizes[g.current]:
            break
        g.apply(pol.act(g.observation(g.current), g.legal_mask()))
    seat = g.current
    bad = next(int(c) for c in np.flatnonzero(g.hands[seat]) if c not in legal)
    a, reason = parse_choice(g, g.pack.names[bad].lower(), legal)
    assert a is None and ("must follow suit" in reason or "must play a trump" in reason)
    a, reason = parse_choice(g, g.pack.names[legal[0]], legal)
    assert a == legal[0] and reason == ""
    not_mine = next(int(c) for c in range(54) if not g.hands[seat, c])
    assert "you do not hold" in parse_choice(g, g.pack.names[not_mine], legal)[1]
    assert "not in the list" in parse_choice(g, str(len(legal) + 1), legal)[1]


def test_discard_reasons_name_the_rule():
    from tarot_env.rules.partita import FORBIDDEN_DISCARD

    for seed in range(20):
        g = new_game("partita", seed, {"deals_per_game": 1})
        forbidden = np.flatnonzero(g.hands[g.dealer] & FORBIDDEN_DISCARD)
        if len(forbidden):
            break
    assert "PAR-4.3" in why_illegal(g, int(forbidden[0]))
    o = new_game("ottocento", 2, {"a_monte": "off"})
    five = [c for c in np.flatnonzero(o.hands[o.dealer]) if o.pack.value[c] == 5]
    if five:
        assert "OTT-4.2" in why_illegal(o, int(five[0]))


def test_quit_and_end_of_input_stop_cleanly():
    rc, text = run_cli(["--game", "partita", "--seat", "0", "--seed", "2"], ["quit"])
    assert rc == 0 and "bye" in text

    def eof(prompt=""):
        raise EOFError
    out: list[str] = []
    assert main(["--game", "millone", "--seat", "0", "--seed", "2"], input_fn=eof, out=out.append) == 0
    assert "bye" in "\n".join(out)


def test_bad_arguments_give_an_error_not_a_traceback(capsys):
    assert run_cli(["--game", "millone", "--seat", "3"])[0] == 2
    assert "--seat must be 0..1" in capsys.readouterr().err
    assert run_cli(["--game", "partita", "--opponents", "nobody"])[0] == 2


@pytest.mark.parametrize("game,opts", [("partita", {"deals_per_game": 2}), ("ottocento", {"target_score": 60}),
                                       ("millone", {"max_hands": 1})])
def test_log_round_trip_replays_to_the_same_game(game, opts, tmp_path):
    log = tmp_path / "g.jsonl"
    players = {s: HeuristicPolicy(game) for s in range(4 if game != "millone" else 2)}
    players[1] = __import__("agents.players.baselines", fromlist=["RandomPolicy"]).RandomPolicy(3)
    final = play_session(game, players, human_seat=None, seed=7, options=opts, games=2, log_path=str(log),
                         out=lambda s: None)
    lines = read_log(str(log))
    assert lines[0]["type"] == "header" and lines[0]["seed"] == 7 and lines[-1]["type"] == "game_end"
    assert sum(1 for x in lines if x["type"] == "next_game") == 1
    again = replay(str(log), quiet=True)
    assert again.to_dict() == final.to_dict()
    # step by step: every action is printed with the table
    shown: list[str] = []
    replay(str(log), out=shown.append, step=True, input_fn=lambda p="": "")
    assert sum(1 for s in shown if s.startswith("\n[")) == sum(1 for x in lines if x["type"] == "action")


def test_replay_refuses_a_log_that_does_not_match(tmp_path):
    log = tmp_path / "g.jsonl"
    play_session("partita", {s: HeuristicPolicy("partita") for s in range(4)}, None, 1, {"deals_per_game": 1},
                 log_path=str(log), out=lambda s: None)
    lines = read_log(str(log))
    acts = [i for i, x in enumerate(lines) if x["type"] == "action"]
    lines[acts[5]]["seat"] = (lines[acts[5]]["seat"] + 1) % 4
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(ValueError, match="does not match"):
        replay(str(log), quiet=True)
    (tmp_path / "x.jsonl").write_text('{"type": "action"}\n')
    with pytest.raises(ValueError, match="header"):
        replay(str(tmp_path / "x.jsonl"), quiet=True)


def test_runs_as_a_command_with_piped_input(tmp_path):
    log = tmp_path / "s.jsonl"
    r = subprocess.run([sys.executable, "-m", "agents.play.human", "--game", "partita", "--seat", "0",
                        "--seed", "5", "-o", "deals_per_game=1", "--log", str(log)],
                       input="KS\n" + "1\n" * 40, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "game over" in r.stdout
    r = subprocess.run([sys.executable, "-m", "agents.play.human", "--replay", str(log)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and "GAME_OVER" in r.stdout


def test_replay_from_one_seats_view_hides_the_others_hidden_cards(tmp_path):
    log = tmp_path / "g.jsonl"
    play_session("millone", {s: HeuristicPolicy("millone") for s in range(2)}, None, 3, {"max_hands": 1},
                 log_path=str(log), out=lambda s: None)
    first = read_log(str(log))[1]
    assert first["type"] == "action" and first["seat"] == 1 - new_game("millone", 3).dealer  # non-dealer discards
    shown: list[str] = []
    replay(str(log), out=shown.append, seat=first["seat"])
    assert any(first["name"] in s for s in shown[:4])  # the discarder sees its own discard
    shown = []
    replay(str(log), out=shown.append, seat=1 - first["seat"])
    step0 = next(s for s in shown if s.startswith("\n[0]"))
    assert "discards a card" in step0 and first["name"] not in step0
    view = shown[shown.index(step0) + 1]
    line = view.split(f"player_{first['seat']} [")[1].split("\n")[0]
    assert "discarded 1 face down" in line and first["name"] not in line.split()


# --- watching, undo, forced moves, summaries (issue #16 item 9) -----------------------------------

def run_module(args, stdin=""):
    """``python -m agents.play.human ARGS`` in a subprocess with scripted stdin."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "agents.play.human", *args], input=stdin, capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env, check=False)


def test_watch_tells_the_game_card_by_card_trick_by_trick():
    r = run_module(["--game", "partita", "--watch", "--seed", "3", "-o", "deals_per_game=1",
                    "--opponents", "heuristic"])
    assert r.returncode == 0, r.stderr
    plays = re.findall(r"^  player_\d plays (\S+)$", r.stdout, re.MULTILINE)
    assert len(plays) == 52 and len(set(plays)) == 52  # every card, as it is played
    tricks = re.findall(r"^  trick (\d+): .* -> won by player_\d$", r.stdout, re.MULTILINE)
    assert tricks == [str(i) for i in range(1, 14)]
    assert r.stdout.index("trick 1:") < r.stdout.index("trick 2:") < r.stdout.index("deal 1 over")
    g = new_game("partita", 3, {"deals_per_game": 1})
    first_table = r.stdout.split("== Partita")[1]
    for seat in range(4):  # a spectator sees every hand
        assert all(name in first_table for name in g.pack.names_of(g.hands[seat]))
    assert "game over" in r.stdout and "your move" not in r.stdout


def test_watch_tells_the_last_trick_of_every_deal_though_the_next_deal_is_dealt(tmp_path):
    # B.4.4: the thirteenth trick closes the deal and the next one is dealt at once; it is told all the same,
    # with the cards and winner of the deal's record
    log = tmp_path / "w.jsonl"
    r = run_module(["--game", "partita", "--watch", "--seed", "3", "-o", "deals_per_game=2",
                    "--opponents", "heuristic", "--log", str(log)])
    assert r.returncode == 0, r.stderr
    tricks = re.findall(r"^  trick (\d+): (.*) -> won by player_(\d)$", r.stdout, re.MULTILINE)
    assert [int(n) for n, _, _ in tricks] == list(range(1, 14)) * 2
    g = new_game("partita", 3, {"deals_per_game": 2})
    for rec in map(json.loads, log.read_text().splitlines()):
        if rec["type"] == "action":
            g.apply(rec["action"])
    assert len(g.history) == 2
    for deal, record in enumerate(g.history):
        cards, winner = record["tricks"][-1]
        _, told, told_winner = tricks[13 * deal + 12]
        assert told == "  ".join(f"player_{s}: {g.pack.names[c]}" for s, c in cards)
        assert int(told_winner) == winner


def test_watch_from_one_seat_shows_only_what_that_seat_saw():
    g = new_game("partita", 3, {"deals_per_game": 1})
    viewer = (g.dealer + 1) % 4
    r = run_module(["--game", "partita", "--seat", "-1", "--view", str(viewer), "--seed", "3",
                    "-o", "deals_per_game=1", "--opponents", "heuristic"])
    assert r.returncode == 0, r.stderr
    first_table = r.stdout.split("== Partita")[1].split("\n  tricks won")[0]
    for seat in range(4):
        shown = [n for n in g.pack.names_of(g.hands[seat]) if n in first_table.split()]
        assert bool(shown) == (seat == viewer)
    assert f"player_{g.dealer} discards" in r.stdout and "(face down)" not in r.stdout  # not named


def test_undo_takes_back_the_person_s_last_move_and_the_log_replays_it(tmp_path):
    log = tmp_path / "u.jsonl"
    out: list[str] = []
    argv = ["--game", "partita", "--seat", "0", "--seed", "5", "-o", "deals_per_game=1", "--log", str(log)]
    assert main(argv, input_fn=scripted(["u", "2", "undo", "1"]), out=out.append) == 0
    text = "\n".join(out)
    assert "nothing to undo" in text and "undone: back to your previous move" in text
    tables = [s for s in out if s.startswith("== Partita")]
    back = out[out.index(next(s for s in out if s.startswith("  undone"))) + 1]
    assert back == tables[0]  # the table of the person's first decision, exactly
    lines = read_log(str(log))
    undo = next(x for x in lines if x["type"] == "undo")
    acts = [x for x in lines if x["type"] == "action"]
    first = next(x for x in acts if x["seat"] == 0)
    assert undo["to"] == first["i"]
    again = next(x for x in lines[lines.index(undo):] if x["type"] == "action")
    assert again["i"] == first["i"] and again["seat"] == 0 and again["action"] != first["action"]
    g = replay(str(log), quiet=True)
    assert g.game_over and g.scores.tolist() == lines[-1]["scores"]
    shown: list[str] = []
    replay(str(log), out=shown.append)
    assert any(s.startswith(f"\n[undo] back to action {first['i']}") for s in shown)


def test_auto_forced_plays_the_only_legal_move_without_asking():
    argv = ["--game", "partita", "--seat", "2", "--seed", "1", "-o", "deals_per_game=1"]
    single = re.compile(r"legal moves: 1\) \S+$", re.MULTILINE)
    rc, text = run_cli(argv)
    assert rc == 0 and single.search(text)  # the last trick at least is forced
    rc, text = run_cli(argv + ["--auto-forced"])
    assert rc == 0 and not single.search(text)
    assert "(the only legal move)" in text and "game over" in text


def test_deal_summaries_name_cards_and_seats_and_count_deals_from_1():
    from agents.play.human import describe_result
    from tarot_env.rules.ottocento import OttocentoGame

    g = OttocentoGame(seed=0)  # a random hand in which the Matto is paid for (seed found once)
    rng = np.random.default_rng(0)
    while not g.history:
        legal = g.legal_actions()
        g.apply(legal[rng.integers(len(legal))])
    res = g.history[-1]
    assert res["matto_paid"] >= 0 and res["hand"] == 0
    text = describe_result(g, res)
    assert text.startswith("-- hand 1 over") and "hand 0" not in text
    assert f"matto paid: {g.pack.names[res['matto_paid']]}" in text and "matto_paid" not in text
    assert f"dealer: player_{res['dealer']}" in text and f"last trick: team {res['last_trick']}" in text
    assert "discards: " + " ".join(g.pack.names[c] for c in res["discards"]) in text
    other = (res["dealer"] + 1) % 4
    assert "discards: 2 face down" in describe_result(g, res, seat=other)  # OTT-4.1: not named to the others


def test_millone_says_players_not_teams_and_shows_the_score_before_the_next_hand_s_claim():
    rc, text = run_cli(["--game", "millone", "--seat", "1", "--seed", "4", "-o", "max_hands=1"])
    assert rc == 0 and "hand 1 over" in text and "team" not in text
    # seed 3, heuristic against heuristic: three hands played, then a claim at the next deal (MIL-3)
    out: list[str] = []
    g = play_session("millone", {0: HeuristicPolicy("millone"), 1: HeuristicPolicy("millone")}, None, 3,
                     out=out.append, watch=True)
    assert g.history[-1].get("claim") and len(g.history) == 4
    text = "\n".join(out)
    assert "team" not in text
    claim = text.index("-- hand 4: player_")
    hand3 = text.index("-- hand 3 over")
    assert hand3 < claim
    before = (g.scores - np.array(g.history[-1]["scores"])).tolist()
    assert f"cumulative: player_0: {before[0]}  player_1: {before[1]}" in text[hand3:claim]
    assert "claims the game (MIL-3)" in text[claim:]


# --- the rules explained, undo told, --watch's players (issue #35) ------------------------------------------
def test_millone_explains_the_discards_and_the_draw_the_first_time_and_on_help():
    rc, text = run_cli(["--game", "millone", "--seat", "0", "--seed", "4", "-o", "max_hands=1", "-o", "first_dealer=1",
                        "--opponents", "random"], ["help draw", "help second_discard", "help nothing"])
    assert rc == 0
    assert text.count("about this: The discards (MIL-2.4): each player discards 10 cards") == 1  # once, not 10x
    assert "two more rounds of five cards each are dealt: the non-dealer is back to 20 cards" in text
    assert "The dealer's two more (MIL-2.6): the dealer alone discards 2 more cards" in text  # help second_discard
    assert "no explanation of 'nothing' in millone; 'help' followed by one of:" in text
    assert text.count("about this: Play (B.4)") == 1


def test_ottocento_explains_a_monte_the_declarations_and_the_signals_where_they_first_come():
    rc, text = run_cli(["--game", "ottocento", "--seat", "0", "--seed", "2", "-o", "target_score=50",
                        "-o", "first_dealer=3", "--opponents", "random"], ["help done", "help void"])
    assert rc == 0
    assert text.count("about this: A monte (OTT-3)") == 1 and "('play_on')" in text
    assert "Declarations (OTT-5)" in text and "'done' (declare_done) ends your declaration" in text
    assert text.count("about this: Signals (OTT-8)") == 1  # the eldest may signal: told when first legal
    assert "'void' (VOID, throwing the card up): I have no more of this suit" in text
    first_signal = text.index("about this: Signals")
    assert "signal:VOID" in text[first_signal:].split("your move")[0]  # told where the signals are legal


def test_undo_says_which_moves_it_took_back_the_others_included():
    out: list[str] = []
    argv = ["--game", "partita", "--seat", "0", "--seed", "5", "-o", "deals_per_game=1"]
    assert main(argv, input_fn=scripted(["2", "undo", "1"]), out=out.append) == 0
    line = next(s for s in out if s.startswith("  undone"))
    taken = line.split("taken back, ")[1]
    n = int(taken.split()[0])
    moves = taken.split(": ", 1)[1].split("; ")
    assert len(moves) == n >= 2
    assert moves[0].startswith("player_0 (you) ")  # the person's move, then the others' after it
    assert all(m.startswith("player_") and "(you)" not in m for m in moves[1:])


def test_watch_plays_the_shipped_policies_unless_told_otherwise():
    rc, text = run_cli(["--game", "millone", "--watch", "--seed", "2", "-o", "max_hands=1"])
    assert rc == 0
    assert text.splitlines()[0] == "millone, seed 2: watching player_0 ppo, player_1 ppo"
    assert "[ppo" in text  # the table names each seat's player
    rc, text = run_cli(["--game", "millone", "--watch", "--seed", "2", "-o", "max_hands=1", "--opponents", "random"])
    assert text.splitlines()[0] == "millone, seed 2: watching player_0 random, player_1 random"


def test_a_bad_seed_or_a_missing_log_is_one_error_line(capsys, tmp_path):
    assert run_cli(["--game", "partita", "--seed", "-1"])[0] == 2
    assert "--seed must be an integer >= 0 or None; got -1" in capsys.readouterr().err
    assert run_cli(["--replay", str(tmp_path / "none.jsonl")])[0] == 2
    assert "cannot read the game log" in capsys.readouterr().err


def test_a_hand_of_one_card_says_1_card():
    from tarot_env.view import render_view

    g = new_game("partita", 3, {"deals_per_game": 1})
    pol = HeuristicPolicy("partita")
    while min(g.hand_sizes) != 1:
        g.apply(pol.act(g.observation(g.current), g.legal_mask()))
    text = render_view(g, None)
    assert ": 1 card" in text and "1 cards" not in text
