"""tarot-web (``tarot_web``): the API refuses every bad request with a 4xx JSON error and changes nothing,
plays a whole game of each game, undoes, hints, downloads a log that ``tarot-play --replay`` and the page
replay, never sends a seat another seat's hidden cards, and serves 100 games at once."""
from __future__ import annotations

import copy
import json
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason="tarot-web needs the web extra: pip install -e '.[web]'")

from starlette.testclient import TestClient  # noqa: E402

from agents.play.human import replay  # noqa: E402
from tarot_env.cards import FRENCH54, TRUMP  # noqa: E402
from tarot_web.app import create_app  # noqa: E402
from tarot_web.session import Event, Session  # noqa: E402
from tarot_web.view import seat_view, table_view  # noqa: E402
from test_player_view import redeal_unseen  # noqa: E402

GAMES = ("partita", "millone", "ottocento")
JSON = {"content-type": "application/json"}
JSONL = {"content-type": "application/x-ndjson"}
ONE_HAND = {"partita": {"deals_per_game": 1}, "millone": {"max_hands": 1}, "ottocento": {"max_hands": 1}}


def bots(game: str, human: int | None = 0, bot: str = "random") -> list[str]:
    n = 2 if game == "millone" else 4
    return ["human" if s == human else bot for s in range(n)]


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url="http://127.0.0.1") as c:
        yield c


def session(client, gid: str) -> Session:
    return client.app.state.tables.store.games[gid]


def wait(client, view: dict) -> dict:
    """The view once the bots have moved (the page's seat to act, or the game over)."""
    deadline = time.monotonic() + 60
    while view["thinking"]:
        assert time.monotonic() < deadline, "the bots did not move"
        time.sleep(0.01)
        view = client.get(f"/api/games/{view['id']}").json()
    assert view["bot_error"] is None
    return view


def new(client, game="partita", **body) -> dict:
    body = {"game": game, "players": bots(game), "seed": 7, **body}
    r = client.post("/api/games", json=body)
    assert r.status_code == 201, r.text
    return wait(client, r.json())


def play_random(client, view: dict, rng, moves: int | None = None) -> dict:
    """Random legal moves of the page's seat (``moves`` of them, or to the end of the game)."""
    done = 0
    while not view["game_over"] and (moves is None or done < moves):
        action = int(rng.choice([m["action"] for m in view["legal"]]))
        r = client.post(f"/api/games/{view['id']}/action", json={"seat": view["human_seat"], "action": action})
        assert r.status_code == 200, r.text
        view = wait(client, r.json())
        done += 1
    return view


def snapshot(s: Session) -> str:
    with s.lock:
        return json.dumps([seat_view(s, s.human), s.records, s.game.to_dict(), s.step, len(s.decisions)])


# --- every bad request: 4xx, a message naming what is wrong, nothing changed ------------------------------
def illegal_card(s: Session) -> int:
    g = s.game
    held = np.flatnonzero(g.hands[s.human])
    not_legal = [int(c) for c in held if not g.legal_mask()[c]]
    return not_legal[0] if not_legal else int(np.flatnonzero(~g.hands[s.human])[0])


BAD_MOVES = {  # name: (path, body or raw text, status, words in the error)
    "illegal card": ("action", lambda s: {"seat": 0, "action": illegal_card(s)}, 422, "illegal action"),
    "action out of range": ("action", {"seat": 0, "action": 9999}, 422, "out of range"),
    "negative action": ("action", {"seat": 0, "action": -1}, 422, "out of range"),
    "wrong seat": ("action", lambda s: {"seat": 1, "action": s.game.legal_actions()[0]}, 403, "not yours"),
    "seat out of range": ("action", {"seat": 9, "action": 0}, 422, "seat = 9"),
    "bool action": ("action", {"seat": 0, "action": True}, 422, "must be an integer"),
    "float action": ("action", lambda s: {"seat": 0, "action": float(s.game.legal_actions()[0])}, 422,
                     "must be an integer"),
    "string action": ("action", {"seat": 0, "action": "KS"}, 422, "must be an integer"),
    "null action": ("action", {"seat": 0, "action": None}, 400, "missing field 'action'"),
    "huge float (inf)": ("action", '{"seat": 0, "action": 1e999}', 422, "must be an integer"),
    "Infinity literal": ("action", '{"seat": 0, "action": Infinity}', 400, "not valid JSON"),
    "NaN literal": ("action", '{"seat": 0, "action": NaN}', 400, "not valid JSON"),
    "bad JSON": ("action", '{"seat": 0, "action": ', 400, "not valid JSON"),
    "not an object": ("action", "[0, 1]", 400, "must be a JSON object"),
    "duplicate key": ("action", '{"seat": 0, "action": 1, "action": 2}', 400, "given twice"),
    "unknown field": ("action", {"seat": 0, "action": 0, "cheat": 1}, 400, "unknown field"),
    "missing seat": ("action", {"action": 0}, 400, "missing field 'seat'"),
    "not UTF-8": ("action", b"\xff\xfe", 400, "UTF-8"),
    "body too large": ("action", "x" * 70_000, 413, "over the limit"),
    "not sent as JSON": ("action", None, 415, "send the body as application/json"),
    "undo at the first move": ("undo", {"seat": 0}, 409, "nothing to undo"),
    "undo of another seat": ("undo", {"seat": 2}, 403, "not yours"),
    "hint for another seat": ("hint", {"seat": 1}, 403, "not yours"),
    "bool seat": ("hint", {"seat": False}, 422, "must be an integer"),
}


@pytest.mark.parametrize("case", sorted(BAD_MOVES))
def test_a_bad_move_request_gets_a_4xx_json_error_naming_it_and_changes_nothing(client, case):
    view = new(client, "partita", options={"first_dealer": 0})  # seat 0 deals: its turn at once
    s = session(client, view["id"])
    path, body, status, words = BAD_MOVES[case]
    body = body(s) if callable(body) else body
    before = snapshot(s)
    url = f"/api/games/{view['id']}/{path}"
    if body is None:  # a form post, as another site's page could send without asking
        r = client.post(url, data={"seat": "0", "action": "1"})
    elif isinstance(body, (str, bytes)):
        r = client.post(url, content=body, headers=JSON)
    else:
        r = client.post(url, json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["error"]
    assert snapshot(s) == before


BAD_GAMES = {
    "unknown game": ({"game": "tarocco", "players": ["human"] * 4}, "unknown game"),
    "bool game": ({"game": True, "players": bots("partita")}, "game must be a string"),
    "unknown player": ({"game": "partita", "players": ["human", "alphago", "random", "random"]}, "unknown player"),
    "a path from the page": ({"game": "partita", "players": ["human", "/etc/passwd", "random", "random"]},
                             "unknown player"),
    "a search with a file rollout": ({"game": "partita", "players": ["human", "pimc:rollout=/tmp/x.pt", "random",
                                                                     "random"]}, "not a named player"),
    "a bad search option": ({"game": "partita", "players": ["human", "pimc:worlds=zero", "random", "random"]},
                            "bad value"),
    "two humans": ({"game": "partita", "players": ["human", "human", "random", "random"]}, "only one seat"),
    "wrong number of seats": ({"game": "millone", "players": ["human", "random", "random"]}, "list of 2"),
    "unknown option": ({"game": "partita", "players": bots("partita"), "options": {"deals": 2}}, "unknown option"),
    "option out of range": ({"game": "partita", "players": bots("partita"), "options": {"deals_per_game": 0}},
                            "out of range"),
    "bool seed": ({"game": "partita", "players": bots("partita"), "seed": True}, "seed must be an integer"),
    "negative seed": ({"game": "partita", "players": bots("partita"), "seed": -1}, "out of range"),
    "infinite pace": ('{"game": "partita", "players": ["human", "random", "random", "random"], "pace": 1e999}',
                      "pace must be a number"),
}


@pytest.mark.parametrize("case", sorted(BAD_GAMES))
def test_a_bad_new_game_request_gets_a_4xx_json_error_naming_it_and_makes_no_game(client, case):
    store = client.app.state.tables.store
    before = len(store.games)
    body, words = BAD_GAMES[case]
    r = (client.post("/api/games", content=body, headers=JSON) if isinstance(body, str)
         else client.post("/api/games", json=body))
    assert 400 <= r.status_code < 500, r.text
    assert words in r.json()["error"]
    assert len(store.games) == before


def test_a_request_addressed_to_another_host_name_is_refused(client):
    r = client.get("/api/meta", headers={"host": "attacker.example:8000"})  # DNS rebinding to 127.0.0.1
    assert r.status_code == 400 and "attacker.example" in r.json()["error"]
    assert client.get("/api/meta", headers={"host": "localhost:8000"}).status_code == 200
    assert client.get("/api/meta", headers={"host": "[::1]:8000"}).status_code == 200


def test_every_response_carries_the_server_s_own_time(client):
    timing = client.get("/api/meta").headers["server-timing"]
    assert timing.startswith("app;dur=") and float(timing.split("=")[1]) >= 0


def test_an_unexpected_failure_is_a_json_500_not_a_traceback(monkeypatch):
    import tarot_web.app

    monkeypatch.setattr(tarot_web.app, "seat_view", lambda s, seat: 1 / 0)
    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        r = c.post("/api/games", json={"game": "millone", "players": bots("millone")})
    assert r.status_code == 500 and r.json() == {
        "error": "internal error (ZeroDivisionError); the server's log has the details"}


def test_the_server_holds_at_most_max_games(client):
    with TestClient(create_app(max_games=2), base_url="http://127.0.0.1") as small:
        for _ in range(2):
            assert small.post("/api/games", json={"game": "millone", "players": bots("millone")}).status_code == 201
        r = small.post("/api/games", json={"game": "millone", "players": bots("millone")})
        assert r.status_code == 429 and "holds 2 games" in r.json()["error"]


def test_unknown_ids_wrong_seats_watched_games_and_unfinished_logs_are_refused(client):
    assert client.get("/api/games/nosuchgameid0").status_code == 404
    assert "unknown game id" in client.post("/api/games/nosuchgameid0/action", json={"seat": 0, "action": 0}
                                            ).json()["error"]
    assert client.get("/api/replays/nosuchreplay/0").status_code == 404
    assert client.get("/api/nothing").json()["error"].startswith("Not Found")
    view = new(client)
    s = session(client, view["id"])
    before = snapshot(s)
    assert client.get(f"/api/games/{view['id']}?seat=1").status_code == 403  # another seat's view
    r = client.get(f"/api/games/{view['id']}/log")
    assert r.status_code == 409 and "not over" in r.json()["error"]  # the log holds every hand
    assert snapshot(s) == before
    watched = client.post("/api/games", json={"game": "millone", "players": ["random", "random"],
                                              "options": ONE_HAND["millone"]}).json()
    r = client.post(f"/api/games/{watched['id']}/action", json={"seat": 0, "action": 0})
    assert r.status_code == 403 and "watched game" in r.json()["error"]


class Gated:
    """A bot that waits for ``gate`` before it plays its first legal action."""

    def __init__(self, gate: threading.Event):
        self.gate = gate

    def act(self, obs, mask) -> int:
        assert self.gate.wait(30)
        return int(np.flatnonzero(mask)[0])


def test_a_move_or_an_undo_while_the_bots_move_is_refused_as_not_your_turn(client):
    tables, gate = client.app.state.tables, threading.Event()
    s = Session("partita", 3, {"first_dealer": 1}, bots("partita"), bots("partita"),  # seat 1 deals: bots first
                {seat: Gated(gate) for seat in (1, 2, 3)}, 0)
    tables.store.add(tables.store.games, s.id, s)
    with s.lock:
        tables.wake_bots(s)
    view = client.get(f"/api/games/{s.id}").json()
    assert view["thinking"] and not view["your_turn"] and view["legal"] == [] and view["to_act"] == 1
    before = snapshot(s)
    card = int(np.flatnonzero(s.game.hands[0])[0])
    r = client.post(f"/api/games/{s.id}/action", json={"seat": 0, "action": card})
    assert r.status_code == 409 and "not your turn: player_1 is to act" in r.json()["error"]
    r = client.post(f"/api/games/{s.id}/undo", json={"seat": 0})
    assert r.status_code == 409 and "not your turn" in r.json()["error"]
    r = client.post(f"/api/games/{s.id}/hint", json={"seat": 0})
    assert r.status_code == 409 and "not your turn" in r.json()["error"]
    assert snapshot(s) == before
    gate.set()
    assert wait(client, view)["your_turn"]


def test_a_watched_game_shows_every_hand_and_its_bots_play_it_to_the_end_at_their_pace(client):
    r = client.post("/api/games", json={"game": "millone", "players": ["random", "heuristic"], "seed": 4,
                                        "pace": 0.001, "options": ONE_HAND["millone"]})
    view = r.json()
    assert view["human_seat"] is None and view["viewer"] is None
    assert all(len(seat["hand"]) == seat["cards"] for seat in view["seats"])  # a spectator sees every hand
    view = wait(client, view)
    assert view["game_over"] and len(view["results"]) == 1 and view["legal"] == []


def test_the_command_line_refuses_bad_players_and_numbers_before_serving(capsys):
    from tarot_web.cli import main

    assert main(["--game", "millone", "--players", "human,random,random", "--no-warm"]) == 2
    assert "needs 1..2 specs" in capsys.readouterr().err
    assert main(["--players", "human,/no/such.pt", "--no-warm"]) == 2
    assert "not a player" in capsys.readouterr().err
    for bad in (["--think-time", "0"], ["--port", "70000"], ["--game", "tarocco"]):
        with pytest.raises(SystemExit) as e:
            main(bad)
        assert e.value.code == 2


# --- whole games, undo, hint, logs ------------------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_a_whole_game_is_played_through_the_api(client, game):
    rng = np.random.default_rng(1)
    view = new(client, game, players=bots(game, human=1))  # the default rules: a whole game, several deals
    view = play_random(client, view, rng)
    s = session(client, view["id"])
    assert view["game_over"] and view["to_act"] is None and view["legal"] == []
    assert view["scores"] == np.asarray(s.game.scores).tolist()
    ended = {"partita": len(view["results"]) == 4, "millone": max(view["scores"]) >= 1000,
             "ottocento": max(view["scores"]) >= 800}[game]
    assert ended and len(view["results"]) == len(s.game.history) > 1
    assert view["results"][0]["text"].startswith(("-- deal 1", "-- hand 1"))
    assert sum(1 for r in s.records if r["type"] == "action") == s.step
    assert s.records[-1]["type"] == "game_end"
    first_move = {"partita": "discards", "millone": "discards", "ottocento": "says"}[game]  # the deal's first phase
    assert first_move in view["log"][0]


def test_undo_goes_back_to_the_person_s_previous_move_with_the_bots_moves(client):
    rng = np.random.default_rng(2)
    view = new(client, "partita", options={"first_dealer": 3})
    before = view
    view = play_random(client, view, rng, moves=2)
    assert view["can_undo"]
    r = client.post(f"/api/games/{view['id']}/undo", json={"seat": 0})
    assert r.status_code == 200
    after = r.json()
    keys = ("seats", "trick", "last_trick", "legal", "scores", "phase", "to_act", "piles")
    assert before["step"] < after["step"] < view["step"]  # back at the person's previous decision
    assert after["your_turn"] and len(after["seats"][0]["hand"]) == len(view["seats"][0]["hand"]) + 1
    assert "undo: back to your previous move" in after["log"][-1]
    s = session(client, view["id"])
    assert s.records[-1] == {"type": "undo", "to": after["step"]}
    assert {k: after[k] for k in keys} != {k: view[k] for k in keys}


def test_undo_restores_exactly_the_table_of_the_previous_decision(client):
    rng = np.random.default_rng(5)
    view = new(client, "millone", options=ONE_HAND["millone"])
    keys = ("seats", "trick", "last_trick", "legal", "scores", "phase", "to_act", "piles", "step", "results")
    view = play_random(client, view, rng, moves=3)
    at_decision = view
    view = play_random(client, view, rng, moves=1)
    after = client.post(f"/api/games/{view['id']}/undo", json={"seat": 0}).json()
    assert {k: after[k] for k in keys} == {k: at_decision[k] for k in keys}
    assert after["log"][:-1] == at_decision["log"]


def test_the_hint_is_the_shipped_network_s_probabilities_over_the_legal_moves(client):
    from agents.players.registry import load_policy

    view = new(client, "ottocento", options={"first_dealer": 3})
    r = client.post(f"/api/games/{view['id']}/hint", json={"seat": 0})
    assert r.status_code == 200, r.text
    moves = r.json()["moves"]
    assert {m["action"] for m in moves} == {m["action"] for m in view["legal"]}
    ps = [m["p"] for m in moves]
    assert ps == sorted(ps, reverse=True) and abs(sum(ps) - 1) < 1e-3
    s = session(client, view["id"])
    net = load_policy("ppo", "ottocento")
    want = net.probs(s.game.observation(0)[None], s.game.legal_mask()[None])[0]
    assert moves[0]["action"] == int(np.argmax(want))


def test_a_downloaded_log_replays_in_tarot_play_and_in_the_page(client, tmp_path):
    rng = np.random.default_rng(3)
    view = new(client, "ottocento", options=ONE_HAND["ottocento"])
    view = play_random(client, view, rng, moves=4)
    assert client.post(f"/api/games/{view['id']}/undo", json={"seat": 0}).status_code == 200
    view = play_random(client, wait(client, client.get(f"/api/games/{view['id']}").json()), rng)
    s = session(client, view["id"])
    r = client.get(f"/api/games/{view['id']}/log")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    path = tmp_path / "game.jsonl"
    path.write_text(r.text)
    assert any(json.loads(line)["type"] == "undo" for line in r.text.splitlines())
    g = replay(str(path), quiet=True)  # tarot-play --replay
    assert g.to_dict() == s.game.to_dict()
    r = client.post("/api/replays", content=r.text, headers=JSONL)
    assert r.status_code == 201, r.text
    n = r.json()["frames"]
    last = client.get(f"/api/replays/{r.json()['id']}/{n - 1}").json()
    with s.lock:
        want = table_view(s.game, None, s.labels)
    assert {k: last[k] for k in want} == json.loads(json.dumps(want))


BAD_LOGS = {
    "not JSON": ("{header", "not valid JSON"),
    "no header": ('{"type": "action", "i": 0, "seat": 0, "action": 1}', "must be the header"),
    "unknown type": ('{"type": "exec", "code": "print(1)"}', "not a game log record"),
    "unknown game": ('{"type": "header", "version": 1, "game": "chess", "seed": 1}', "unknown game"),
    "bool seed": ('{"type": "header", "version": 1, "game": "partita", "seed": true}', "seed must be an integer"),
    "bad option": ('{"type": "header", "version": 1, "game": "partita", "seed": 1, "options": {"x": 1}}',
                   "unknown option"),
    "illegal action": ('{"type": "header", "version": 1, "game": "partita", "seed": 1, "human_seat": 0}\n'
                       '{"type": "action", "i": 0, "seat": 0, "action": 999}', "action must be an integer"),
    "empty": ("", "empty"),
}


@pytest.mark.parametrize("case", sorted(BAD_LOGS))
def test_a_bad_log_is_refused_with_the_line_and_the_reason(client, case):
    text, words = BAD_LOGS[case]
    before = len(client.app.state.tables.store.replays)
    r = client.post("/api/replays", content=text, headers=JSONL)
    assert 400 <= r.status_code < 500 and words in r.json()["error"], r.text
    assert len(client.app.state.tables.store.replays) == before


def test_a_log_whose_action_is_illegal_there_is_refused_naming_its_line(client):
    from agents.play.human import new_game

    g = new_game("partita", 1, {})
    wrong = next(a for a in range(g.pack.size) if not g.legal_mask()[a])
    text = (json.dumps({"type": "header", "version": 1, "game": "partita", "seed": 1, "human_seat": 0}) + "\n"
            + json.dumps({"type": "action", "i": 0, "seat": g.current, "action": wrong}))
    r = client.post("/api/replays", content=text, headers=JSONL)
    assert r.status_code == 422 and "log line 2" in r.json()["error"] and "illegal" in r.json()["error"]


# --- no hidden information leaks -------------------------------------------------------------------------------
LEAK_OPTIONS = {"partita": {"partita_signals": "bolognese3", "deals_per_game": 2},
                "millone": {"max_hands": 2}, "ottocento": {"ott_signal_players": "all", "max_hands": 2}}


def hidden_discards_of_others(game: str, record: dict, seat: int) -> list[int]:
    """The card ids in a finished deal's record that ``seat`` may not know (the others' hidden discards)."""
    d = record.get("discards", [])
    if game == "millone":
        return list(d[1 - seat])
    if record.get("dealer") == seat:
        return []
    return [c for c in d if not (game == "partita" and FRENCH54.suit[c] == TRUMP)]  # Partita's trumps are announced


def redeal_session(s: Session, seat: int, rng) -> Session:
    """A copy of ``s`` in which what ``seat`` cannot know is different: the unseen cards dealt again,
    the other seats' hidden discards in the log and in the finished deals' records replaced."""
    h = copy.copy(s)
    h.game = redeal_unseen(s.game, seat, rng)
    h.events = []
    for e in s.events:
        e = copy.copy(e)
        if e.seat is not None and e.seat != seat and e.owner != e.public:
            e.owner = e.full = "player_x discards SOMETHING ELSE"
        if e.result is not None and "discards" in e.result:  # (a thrown-in hand has none)
            e.result = copy.deepcopy(e.result)
            hidden = set(hidden_discards_of_others(s.game_name, e.result, seat))
            pack = s.game.pack  # a hidden Partita discard is never a trump: its stand-ins are not either
            candidates = np.flatnonzero(pack.suit != TRUMP) if s.game_name == "partita" else np.arange(pack.size)
            others = [int(c) for c in rng.permutation(candidates) if c not in hidden]
            key = e.result["discards"]
            target = key[1 - seat] if s.game_name == "millone" else key
            for i, c in enumerate(target):
                if c in hidden:
                    target[i] = int(others.pop())
        h.events.append(e)
    return h


def sessions_along_random_games(game: str, positions: int):
    """Sessions at ``positions`` moments of random games (the page's seat changes from game to game)."""
    rng = np.random.default_rng(11)
    count, seed = 0, 0
    while count < positions:
        human = seed % (2 if game == "millone" else 4)
        s = Session(game, seed, LEAK_OPTIONS[game], bots(game, human), bots(game, human), {}, human)
        seed += 1
        while not s.over and count < positions:
            seat = s.game.current
            action = int(rng.choice(s.game.legal_actions()))
            s.human_move(seat, action) if seat == human else s.apply(seat, action)
            count += 1
            yield s


@pytest.mark.parametrize("game", GAMES)
def test_a_seat_s_response_is_identical_when_what_it_cannot_know_is_redealt(game):
    rng = np.random.default_rng(0)
    checked = changed = 0
    for s in sessions_along_random_games(game, 1000):
        body = json.dumps(seat_view(s, s.human))  # the body GET /api/games/{id} sends
        other = redeal_session(s, s.human, rng)
        assert json.dumps(seat_view(other, s.human)) == body, f"{game} step {s.step}"
        checked += 1
        changed += not np.array_equal(other.game.hands, s.game.hands)
    assert checked == 1000
    assert changed > 900  # the re-deals did change what the seat cannot see (the test is not vacuous)


def test_the_http_body_is_the_view_the_leak_test_checks(client):
    view = new(client, "millone")
    s = session(client, view["id"])
    r = client.get(f"/api/games/{view['id']}")
    with s.lock:
        assert r.json() == json.loads(json.dumps(seat_view(s, 0)))
        other = s.game.hands[1]
    shown = {c for seat in r.json()["seats"] for c in (seat["hand"] or [])}
    assert shown == set(np.flatnonzero(s.game.hands[0]).tolist()) and not shown & set(np.flatnonzero(other).tolist())


def test_a_hidden_discard_is_named_to_its_owner_and_a_spectator_only():
    e = Event("player_1 discards a card", 1, "player_1 (you) discards KS (face down)", "player_1 discards KS")
    assert [e.text_for(v) for v in (0, 1, 2, None)] == [
        "player_1 discards a card", "player_1 (you) discards KS (face down)", "player_1 discards a card",
        "player_1 discards KS"]


# --- many games at once ------------------------------------------------------------------------------------------
def test_100_games_at_once_by_scripted_clients_over_loopback_end_without_an_error():
    from tarot_web.bench import play_games, serve

    game = {"game": "partita", "players": bots("partita"), "options": {"deals_per_game": 1}}
    with serve(create_app()) as base:
        run = play_games(base, 100, [game])
    assert run.errors == []
    assert run.finished == 100


# --- the players a page may seat, the search's time cap, the rules in words --------------------------------------
def test_a_search_player_s_time_is_capped_at_the_server_s_think_time():
    from tarot_web.players import PlayerRules

    rules = PlayerRules(think_time=0.25)
    assert rules.load("pimc:time=30,worlds=8,rollout=random", "partita", {}, 0).time_limit == 0.25
    assert rules.load("pimc:worlds=8", "partita", {}, 0).time_limit == 0.25  # no time given: the cap
    assert rules.load("ppo+pimc:time=0.1", "partita", {}, 0).time_limit == 0.1  # a shorter one is kept
    with pytest.raises(ValueError, match="not a named player"):
        rules.check("ppo+pimc:prior=/tmp/net.pt")


def test_a_search_bot_plays_in_a_game_and_the_page_is_told_it_is_thinking(client):
    r = client.post("/api/games", json={"game": "partita", "seed": 2, "options": {"first_dealer": 1},
                                        "players": ["human", "pimc:worlds=2,rollout=random,engine=rules",
                                                    "random", "random"]})
    assert r.status_code == 201 and r.json()["thinking"]  # the page shows "player_1 (pimc...) is thinking"
    view = wait(client, r.json())
    assert view["your_turn"] and view["players"][1].startswith("pimc")
    assert sum(1 for line in view["log"] if line.startswith("player_1 ")) >= 3  # two discards and a lead


@pytest.mark.parametrize("game", GAMES)
def test_every_phase_and_special_action_is_explained_in_words(game):
    from agents.play.human import new_game
    from tarot_web.explain import explanations

    opts = {"partita": {"partita_signals": "bolognese3"}, "millone": {}, "ottocento": {"ott_signal_players": "all"}}
    rng = np.random.default_rng(4)
    g = new_game(game, 4, {**opts[game], **ONE_HAND[game]})
    seen, phases = set(), set()
    while not g.game_over:
        legal = g.legal_actions()
        phases.add(f"{game}:{g.phase.name}")
        seen |= {x["key"] for x in explanations(g, legal) if x["text"]}
        g.apply(int(rng.choice(legal)))
    assert phases <= seen
    specials = {"partita": {"signals"}, "millone": set(), "ottocento": {"signals", "declare_done"}}[game]
    assert specials <= seen


def test_every_frame_of_a_replay_is_the_game_after_that_step_of_the_log(client):
    from tarot_web.logs import CHECKPOINT, Replay, parse_log

    rng = np.random.default_rng(6)
    view = play_random(client, new(client, "millone", options={"max_hands": 2}), rng, moves=12)
    assert client.post(f"/api/games/{view['id']}/undo", json={"seat": 0}).status_code == 200
    play_random(client, client.get(f"/api/games/{view['id']}").json(), rng)
    records = parse_log(client.get(f"/api/games/{view['id']}/log").text)
    replay = Replay(records)
    assert len(replay) > 3 * CHECKPOINT  # most frames are rebuilt from a kept clone
    # the reference: every step applied in order, a clone kept before each of the person's actions
    from agents.play.human import new_game

    game, before, want = new_game("millone", records[0]["seed"], records[0]["options"]), {}, []
    want.append(game.to_dict())
    for rec in records[1:]:
        if rec["type"] == "action":
            if rec["seat"] == 0:
                before[rec["i"]] = game.clone()
            game.apply(rec["action"])
            want.append(game.to_dict())
        elif rec["type"] == "undo":
            game = before[rec["to"]].clone()
            want.append(game.to_dict())
    assert [replay.game(k).to_dict() for k in range(len(replay))] == want


@pytest.mark.parametrize("game", GAMES)
def test_the_log_tells_every_trick_with_its_winner_the_last_of_each_deal_too(client, game):
    view = play_random(client, new(client, game, players=bots(game, human=1)), np.random.default_rng(8))
    s = session(client, view["id"])
    tricks = [line for line in view["log"] if line.startswith("trick ")]
    per_deal = {"partita": 13, "millone": 20, "ottocento": 15}[game]
    played = [r for r in s.results if not r.get("thrown_in") and not r.get("claim")]
    assert len(tricks) == per_deal * len(played)
    assert [int(t.split()[1].rstrip(":")) for t in tricks] == list(range(1, per_deal + 1)) * len(played)
    if s.results[-1] in played:  # the table still shows the game's last trick
        shown = view["last_trick"]
        assert shown["number"] == per_deal and tricks[-1].endswith(f"player_{shown['winner']}")
    for r, last in zip(played, [t for t in tricks if t.startswith(f"trick {per_deal}:")]):
        if "last_trick" in r:  # the side that took the last trick, by the deal's record
            winner = int(last.rsplit("player_", 1)[1])
            assert s.game.team_of[winner] == r["last_trick"]


def test_ottocento_signals_and_declarations_are_shown_to_every_seat(client):
    view = new(client, "ottocento", options={"ott_signal_players": "all", "max_hands": 3})
    signals, declared = [], []
    while not view["game_over"]:
        names = {m["name"]: m["action"] for m in view["legal"]}
        wanted = [a for n, a in names.items() if n.startswith("signal:") or n == "play_on"]
        wanted += [a for n, a in names.items() if n != "declare_done"]  # reveal what may be declared
        action = wanted[0] if wanted else names["declare_done"]
        view = wait(client, client.post(f"/api/games/{view['id']}/action", json={"seat": 0, "action": action}).json())
        signals += [x for x in view["signals"] if x not in signals]
        declared += [seat["extra"] for seat in view["seats"] if "declared:" in seat["extra"]]
    mine = [x for x in signals if x["seat"] == 0]
    assert mine and all(x["signal"].startswith("signal:") and x["trick"] >= 1 for x in mine)
    assert any(" = " in text for text in declared)  # a declaration with its points, as every seat sees it


def test_the_page_names_no_address_elsewhere_and_draws_its_own_cards(client):
    import re
    from pathlib import Path

    import tarot_web

    static = Path(tarot_web.__file__).parent / "static"
    for f in static.iterdir():
        assert not re.search(r"(https?:)?//[\w.-]+\.\w", f.read_text()), f"{f.name} names another address"
    page = client.get("/").text
    assert all(client.get(src).status_code == 200 for src in re.findall(r'(?:src|href)="(/static/[^"]+)"', page))
    assert "<svg" in client.get("/static/cards.js").text
