"""The web table's API: every endpoint, with good and bad input (the browser test is in
test_web_browser.py)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from ono_env.apps.web.server import MAX_BODY, SMALL_BODY, create_app, main
from ono_env.arena import run_arena
from ono_env.game import VecGame
from ono_env.replay import Replay, clean_label
from ono_env.rules import RuleSet


@pytest.fixture
def client():
    return TestClient(create_app())


JSON = {"content-type": "application/json"}


def new_game(client, **body):
    body = {"rules": "basic", "num_players": 2, "opponents": ["greedy"], "seed": 3, **body}
    r = client.post("/api/games", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def play_out(client, view, pick=lambda legal: legal[0]["name"], seen=None):
    """Take ``pick(legal)`` at every decision of the human until the game ends; each view's
    events (the table's last key event) are added to ``seen`` where given."""
    steps = 0
    while not view["finished"]:
        if seen is not None:
            seen.extend(view["events"])
        r = client.post(f"/api/games/{view['id']}/action",
                        json={"action": pick(view["legal"]), "move": view["move"]})
        assert r.status_code == 200, r.text
        view = r.json()
        steps += 1
        assert steps < 5000
    return view


def refused(response, status, *fragments):
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    for f in fragments:
        assert f in error, (f, error)
    return error


# ---- options and new games -------------------------------------------------------------
def test_options_list_presets_agents_and_rule_choices(client):
    o = client.get("/api/options").json()
    assert {"greedy", "random", "ppo-basic-2p", "ppo-classic-2p"} <= set(o["agents"])
    assert set(o["presets"]) == {"basic", "classic", "ono", "stacking", "uno2018", "wikipedia"}
    assert o["presets"]["classic"]["target_score"] == 500
    assert "draw" in o["choices"]["ono_penalty"]


def test_a_key_given_as_null_takes_its_default(client):
    """Before: "seed": null and "num_players": null took their defaults, while "seat",
    "thinking", "rules" and "options" given as null were refused."""
    view = new_game(client, rules=None, options=None, num_players=None, seat=None,
                    thinking=None, seed=None, opponents=["greedy"] * 3)   # basic: 4 players
    table = client.app.state.tables.get(view["id"])
    assert table.rules == RuleSet.preset("basic") and table.seat == 0
    assert table.show_thinking is False
    r = client.post("/api/agents", json={"rules": None, "options": None, "num_players": None})
    assert r.status_code == 200 and "greedy" in r.json()["agents"]
    # a body that is no UTF-8 says where it stops being so
    refused(client.post("/api/games", headers=JSON, content=b'{"rules": "\xff"}'), 400,
            "a request body is UTF-8 JSON text, and this one is not (invalid start byte at "
            "byte 11)")


def test_a_new_game_is_seen_from_the_humans_seat_only(client):
    from ono_env.apps.web.table import Table
    view = new_game(client, rules="classic", num_players=4, seat=2,
                    opponents=["greedy", "random", "defensive"], seed=7)
    table = client.app.state.tables.get(view["id"])
    assert isinstance(table, Table)
    truth = table.game.to_dict(0)
    assert view["hand"] == truth["hands"][2]
    assert [p["cards"] for p in view["players"]] == [len(h) for h in truth["hands"]]
    assert [p["label"] for p in view["players"]] == ["greedy", "random", "you", "defensive"]
    text = json.dumps(view)
    assert "rng" not in view and isinstance(view["stock"], int)
    for q in (0, 1, 3):      # no other hand appears anywhere in what the browser gets
        assert json.dumps(truth["hands"][q]) not in text
    assert json.dumps(truth["stock"][:5])[1:-1] not in text
    # the legal actions are offered only on the human's turn
    assert (view["legal"] != []) == (view["current"] == 2)


def test_the_seed_fixes_the_deal_and_the_agents(client):
    a, b = new_game(client, seed=12), new_game(client, seed=12)
    assert a["id"] != b["id"] and a["hand"] == b["hand"]
    a, b = play_out(client, a), play_out(client, b)
    assert a["history"] == b["history"] and a["result"] == b["result"]


def test_an_unknown_agent_is_refused_with_the_agents_that_fit_this_table(client):
    """Before: every allowed label was listed, the specialists of other tables too."""
    body = {"rules": "basic", "num_players": 4, "opponents": ["greedy", "greedy", "nobody"]}
    error = refused(client.post("/api/games", json=body), 400, "unknown agent 'nobody'")
    listed = error.split("allowed: ")[1]
    assert "ppo-basic-4p" in listed and "ppo-any" in listed and "ppo-basic-2p" not in listed
    error = refused(client.post("/api/games", json={**body, "opponents": "greedy"}), 400,
                    "opponents must be a list of agent names; allowed:", "or a search agent (pimc,")
    assert "ppo-basic-2p" not in error


def test_a_model_of_another_player_count_is_refused_in_the_tables_words(client):
    """What to choose at the web table, and no terminal command (before: "num_players=4;
    ono-arena --players 4; ono-play with 3 agents for the other seats")."""
    body = {"rules": "basic", "num_players": 2, "opponents": ["ppo-basic-4p"]}
    assert refused(client.post("/api/games", json=body), 400) == (
        "agent 'ppo-basic-4p' cannot sit at this table: this model: trained for 4 players, asked "
        "to play 2 (the table's player count); allowed: a table of 4 players under its basic "
        "rules (choose 4 players); or ppo-any, which plays every rule set at 2-10 players")
    error = refused(client.post("/api/games", json={**body, "rules": "classic"}), 400,
                    "and its rules differ from this table's (dealer, ", " and 4 more)",
                    "(choose 4 players and those rules)")
    assert "ono-arena" not in error and "ono-play" not in error, error


@pytest.mark.parametrize("body, status, fragments", [
    ({"rules": "nope"}, 400, ["not a preset; allowed: basic"]),
    ({"rules": "configs/rules/basic.yaml"}, 400, ["not a preset"]),
    ({"rules": "../../etc/passwd"}, 400, ["not a preset"]),
    # before: the list left out the search agents, which the server takes
    ({"opponents": ["nobody"]}, 400, ["unknown agent 'nobody'; allowed:", "greedy",
                                      "or a search agent (pimc, ", "name:N or name:<T>ms"]),
    ({"opponents": ["agents/models/ppo-basic-2p.safetensors"]}, 400, ["unknown agent"]),
    ({"opponents": ["greedy", "greedy"]}, 400, ["2 opponents for 2 players: give 1"]),
    ({"num_players": 3, "opponents": ["greedy"]}, 400, ["1 opponent for 3 players: give 2"]),
    ({"opponents": "greedy"}, 400, ["opponents must be a list"]),
    ({"num_players": 11}, 400, ["num_players"]),
    ({"seat": 2}, 400, ["seat"]),
    ({"seed": -1}, 400, ["seed"]),
    # before: up to 2**63 - 1, which the page cannot show exactly
    ({"seed": 2**53}, 400, ["seed=9007199254740992; allowed: an integer from 0 to "]),
    ({"options": {"stacking": "yes"}}, 400, ["stacking"]),
    ({"options": {"no_such_rule": 1}}, 400, ["no_such_rule"]),
    ({"options": [1]}, 400, ["options must be an object"]),
    ({"options": {"num_players": 5}}, 400,
     ["options sets num_players=5 and num_players is 2: give the player count once"]),
    ({"thinking": "on"}, 400, ["thinking"]),
    ({"colour": "red"}, 400, ["unknown key 'colour'"]),
    ({"opponents": ["ppo-classic-2p"]}, 400, ["ppo-classic-2p", "trained for 'classic' rules"]),
])
def test_bad_new_games_are_refused_with_the_reason(client, body, status, fragments):
    before = len(client.app.state.tables)
    full = {"rules": "basic", "num_players": 2, "opponents": ["greedy"], **body}
    refused(client.post("/api/games", json=full), status, *fragments)
    assert len(client.app.state.tables) == before


def test_the_table_and_the_replay_viewer_name_custom_rules_as_custom(client):
    """Before: the page headed a table of changed rules with the preset's name alone."""
    assert new_game(client)["rules_title"] == "basic rules"
    view = new_game(client, options={"hand_size": 5})
    assert view["rules_title"] == "custom rules based on basic"
    end = play_out(client, view)
    rid = client.post(f"/api/games/{end['id']}/replay").json()["id"]
    assert client.get(f"/api/replays/{rid}").json()["rules_title"] == "custom rules based on basic"


def test_each_option_says_what_it_does_as_in_the_terminal(client):
    """Before: the view named each legal action only, and the browser's buttons too."""
    from ono_env.render import option_hint
    view = new_game(client, rules="classic", seed=4)   # a voluntary draw: draw is legal
    hints = {a["name"]: a["hint"] for a in view["legal"]}
    assert hints["draw"] == "draw a card" and all(h == "" for n, h in hints.items()
                                                  if n.startswith("play"))
    table = client.app.state.tables.get(view["id"])
    ids = [a["id"] for a in view["legal"]]
    assert [a["hint"] for a in view["legal"]] == [option_hint(a, table.position, ids) for a in ids]


def test_bodies_are_utf8_json_at_every_endpoint(client):
    """Before: the game endpoints let ``json.loads`` guess UTF-16 or UTF-32 from the bytes and
    read any charset as UTF-8, where replay uploads refused them."""
    body = json.dumps({"rules": "basic", "num_players": 2, "opponents": ["greedy"]})
    before = len(client.app.state.tables)
    for encoded in (body.encode("utf-16"), body.encode("utf-32")):
        refused(client.post("/api/games", headers=JSON, content=encoded), 400,
                "a request body is UTF-8 JSON text")
    # UTF-16 without a BOM is valid UTF-8 (a NUL before each character), and not JSON
    refused(client.post("/api/games", headers=JSON, content=body.encode("utf-16-be")), 400,
            "malformed", "it must be JSON")
    for charset in ("latin-1", '"utf-16"'):
        refused(client.post("/api/games", content=body.encode(),
                            headers={"content-type": f"application/json; charset={charset}"}),
                415, "charset", "allowed: utf-8")
    refused(client.post("/api/replays", content=b"{}",
                        headers={"content-type": "application/json; charset=latin-1"}), 415,
            "charset")
    assert len(client.app.state.tables) == before
    ok = client.post("/api/games", content=body.encode(),
                     headers={"content-type": 'application/json; charset="UTF-8"'})
    assert ok.status_code == 200
    # a byte order mark is skipped, as every JSON reader of the project skips it (before:
    # refused in Python's words, "decode using utf-8-sig", naming nothing allowed)
    marked = client.post("/api/games", headers=JSON, content=b"\xef\xbb\xbf" + body.encode())
    assert marked.status_code == 200, marked.text


def test_bodies_that_are_not_json_objects_are_refused(client):
    refused(client.post("/api/games", headers=JSON, content=b"{oops"), 400, "malformed",
            "it must be JSON")
    refused(client.post("/api/games", headers=JSON, content=b"[" * 30_000), 400,
            "nested too deeply")
    refused(client.post("/api/games", json=[1, 2]), 400, "must be a JSON object")
    refused(client.post("/api/games", json={}), 400, "missing key 'opponents'")
    # a body must say it is JSON (a page on another site cannot, without asking first)
    refused(client.post("/api/games", content=b'{"opponents": ["greedy"]}'), 415,
            "must be sent as application/json")
    refused(client.post("/api/games", headers={"content-type": "text/plain"},
                        content=b'{"opponents": ["greedy"]}'), 415, "text/plain")


def test_rule_options_and_matches(client):
    view = new_game(client, rules="classic", options={"target_score": 60, "challenge": False},
                    seed=5)
    assert view["rules"]["target_score"] == 60 and view["rules"]["challenge"] is False
    assert view["match"] is True
    seen: list[str] = []
    end = play_out(client, view, seen=seen)
    seen += end["events"]
    assert len(end["result"]["winners"]) == 1
    assert max(end["result"]["scores"]) >= 60
    assert end["round"] >= 2  # the seed's match takes more than one round
    for k in range(1, end["round"] + 1):
        assert any(e.startswith(f"round {k} won by P") and "; scores you " in e for e in seen), k


def test_a_round_end_at_a_full_table_keeps_its_result_in_the_view(client):
    # before: the view's events were the last five lines, and at six players the hands
    # counted (one line a seat) pushed the round's result out
    view = new_game(client, rules="classic", num_players=6, opponents=["greedy"] * 5,
                    options={"target_score": 400}, seed=4)
    seen: list[str] = []
    end = play_out(client, view, seen=seen)
    seen += end["events"]
    assert end["round"] >= 2
    for k in range(1, end["round"] + 1):
        assert any(e.startswith(f"round {k} won by P") for e in seen), k
    for k in range(1, end["round"]):   # the rounds the match went on after: their hands too
        at = next(i for i, e in enumerate(seen) if e.startswith(f"round {k} won by P"))
        assert sum(" show" in e and e.endswith(" points") for e in seen[at + 1:at + 6]) == 5
    # the decision that ended the round, for a page whose log no longer reaches back to it
    entry = [h for h in end["history"] if h["decision"] == end["events_decision"]]
    assert end["events_decision"] < end["decisions"] and len(entry) == 1
    assert entry[0]["events"][-len(end["events"]):] == end["events"]


# ---- decisions -------------------------------------------------------------------------
def test_decisions_by_id_or_name_and_the_refusals(client):
    view = new_game(client, seed=21)
    gid, move = view["id"], view["move"]
    legal = {a["id"] for a in view["legal"]}
    illegal = next(a for a in range(85) if a not in legal)
    from ono_env import cards as C
    e = refused(client.post(f"/api/games/{gid}/action", json={"action": illegal, "move": move}),
                400, "is not legal now")
    assert C.action_name(view["legal"][0]["id"]) in e and "; legal now: " in e
    # with the terminal's reason (before: none)
    from ono_env.render import why_not_legal
    name, table = C.action_name(illegal), client.app.state.tables.get(gid)
    why = why_not_legal(name, table.position, sorted(legal))
    assert why.startswith(" (") and e.startswith(f"{name!r} is not legal now{why}; legal now: "), e
    refused(client.post(f"/api/games/{gid}/action", json={"action": 85, "move": move}),
            400, "out of range; allowed: 0 .. 84")
    refused(client.post(f"/api/games/{gid}/action", json={"action": "play Q7", "move": move}),
            400, "legal now:")
    refused(client.post(f"/api/games/{gid}/action", json={"action": True, "move": move}),
            400, "give an action id or name")
    refused(client.post(f"/api/games/{gid}/action", json={"action": view["legal"][0]["id"]}),
            400, "missing key 'move'")
    # a view the table never showed is bad input, not a stale decision (before: 409, and the
    # message cut 10**30 to its first 20 digits, another number); a long number by its digits
    for never, named in ((move + 1, str(move + 1)), (-1, "-1"),
                         (10**30, "<an integer of 31 digits>")):
        refused(client.post(f"/api/games/{gid}/action", json={"action": view["legal"][0]["id"],
                                                              "move": never}),
                400, f"move {named}: no such view; allowed: the number of a view the table "
                     f"showed, 0 .. {move}")
    for odd in (str(move), True, float(move)):   # not a view's number: 400, not a stale 409
        refused(client.post(f"/api/games/{gid}/action", json={"action": view["legal"][0]["id"],
                                                              "move": odd}),
                400, "move must be the integer number of the view the decision was made on")
    # nothing changed: the same view
    assert client.get(f"/api/games/{gid}").json() == view
    by_name = client.post(f"/api/games/{gid}/action",
                          json={"action": view["legal"][0]["name"], "move": move})
    assert by_name.status_code == 200 and by_name.json()["move"] == move + 1
    # the old view's decision is now stale, even when it names a legal action
    refused(client.post(f"/api/games/{gid}/action",
                        json={"action": view["legal"][0]["id"], "move": move}), 409, "stale")


def test_unknown_games_and_finished_games(client):
    refused(client.get("/api/games/feedfacefeedface"), 404, "no game 'feedfacefeedface'")
    refused(client.post("/api/games/nothere/action", json={"action": 0, "move": 0}), 404, "no game")
    end = play_out(client, new_game(client))
    refused(client.post(f"/api/games/{end['id']}/action", json={"action": "draw", "move": end["move"]}),
            409, "the game is over")


def test_oversized_requests_are_refused(client):
    big = b'{"opponents": ["' + b"x" * (MAX_BODY + 10) + b'"]}'
    refused(client.post("/api/games", headers=JSON, content=big), 413, "at most")

    def chunks():       # no content-length: the body is counted as it arrives
        yield b'{"opponents": ["'
        for _ in range(MAX_BODY // 65536 + 2):
            yield b"x" * 65536
        yield b'"]}'
    refused(client.post("/api/games", headers=JSON, content=chunks()), 413, "more than")
    # every request but an upload: SMALL_BODY (before: MAX_BODY, parsed on the event loop);
    # told or counted, one wording (before: "...; at most N" and "request body over N bytes")
    mid = b'{"opponents": ["' + b"x" * (SMALL_BODY + 10) + b'"]}'
    for path in ("/api/games", "/api/agents"):
        assert refused(client.post(path, headers=JSON, content=mid), 413) \
            == f"request body of {len(mid)} bytes; allowed: at most {SMALL_BODY}"
        assert refused(client.post(path, headers=JSON, content=iter([mid])), 413) \
            == f"request body of more than {SMALL_BODY} bytes; allowed: at most {SMALL_BODY}"
    assert client.post("/api/replays", headers=JSON, content=mid).status_code == 400   # read
    assert client.post("/api/replays/", headers=JSON, content=mid).status_code == 400   # its URL
    # a length of digits that are not ASCII, which HTTP clients do not send but a raw socket
    # can (before: int('\u00b2') failed inside the middleware)
    import asyncio

    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/api/games", "raw_path": b"/api/games",
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                         (b"content-length", "\u00b2".encode("latin-1"))]}
    asyncio.run(client.app(scope, receive, send))
    assert sent[0]["status"] == 413 and b"at most" in sent[1]["body"]


def test_one_client_holds_a_quarter_of_the_games_and_then_replaces_its_own():
    """Before: one client's 200 games, kept alive by polling them, refused every other
    client's new game (503) for as long as it polled."""
    app = create_app(max_tables=8)
    tables = app.state.tables
    greedy, other = TestClient(app, client=("10.0.0.1", 1)), TestClient(app, client=("10.0.0.2", 1))
    mine = [new_game(greedy, seed=s) for s in range(5)]   # two a quarter of 8: each replaces
    assert len(tables) == 2 and tables.per_client == 2
    for gone in mine[:3]:
        refused(greedy.get(f"/api/games/{gone['id']}"), 404, "dropped", "and 2 of one client "
                "address, whose new game beyond them takes the place of its own")
    for kept in mine[3:]:
        assert greedy.get(f"/api/games/{kept['id']}").status_code == 200
    theirs = new_game(other, seed=9)                      # the other client: a place of its own
    assert other.get(f"/api/games/{theirs['id']}").status_code == 200
    for v in mine[3:]:   # a request at work on each of its games: its new game is refused
        tables.hold(v["id"])
    refused(greedy.post("/api/games", json={"rules": "basic", "num_players": 2,
                                            "opponents": ["greedy"]}), 503,
            "this client holds its 2 games, each with a request at work on it")
    assert len(tables) == 3
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="max_tables_per_client"):
            create_app(max_tables_per_client=bad)


def test_clients_that_fill_the_server_by_their_quarters_leave_room_for_another():
    """Before: four addresses that each held a quarter of the games, polling them, refused
    every other client's new game for as long as they polled. Now a new game takes the place
    of a game of the address that holds the most, where it holds at least two more."""
    app = create_app(max_tables=8)
    tables = app.state.tables
    clients = [TestClient(app, client=(f"10.0.0.{k}", 1)) for k in range(1, 6)]
    held = [[new_game(c, seed=s) for s in range(2)] for c in clients[:4]]   # 4 x 2: full
    assert len(tables) == 8
    for v in held[0][:1] + held[1]:   # a request at work on these: they stay
        tables.hold(v["id"])
    late = new_game(clients[4], seed=7)   # before: 503, "the server holds its 8 games"
    assert clients[4].get(f"/api/games/{late['id']}").status_code == 200 and len(tables) == 8
    # the least recently used free game of the first address that holds the most
    refused(clients[0].get(f"/api/games/{held[0][1]['id']}"), 404, "dropped")
    gone = [c.get(f"/api/games/{v['id']}").status_code for c, vs in zip(clients, held)
            for v in vs]
    assert gone == [200, 404, 200, 200, 200, 200, 200, 200]
    for c in (clients[0], clients[4]):   # none holds two more than these: refused, as before
        refused(c.post("/api/games", json={"rules": "basic", "num_players": 2,
                                           "opponents": ["greedy"]}), 503, "holds its 8 games")
    assert len(tables) == 8


def test_several_games_at_once_and_which_one_a_new_game_drops():
    """A full server makes room with a finished game left for FINISHED_SECONDS first, then a
    game in play left for IDLE_SECONDS, never one a request is working on; where none may go
    a new game is refused, and a refused request drops nothing: one client's new games never
    drop another's game in play (before: the oldest went, whatever it was)."""
    app = create_app(max_tables=3, max_tables_per_client=4)   # one client: the server's rule
    client = TestClient(app)
    tables = app.state.tables
    now = [1000.0]
    tables.clock = lambda: now[0]
    views = [new_game(client, seed=s) for s in range(3)]
    full = {"rules": "basic", "num_players": 2, "opponents": ["greedy"], "seed": 9}
    refused(client.post("/api/games", json=full), 503,
            "the server holds its 3 games, each in use in the last 10 minutes or finished in "
            "the last 2; allowed: a new game once one of them has rested that long")
    finished = play_out(client, client.get(f"/api/games/{views[1]['id']}").json())
    assert finished["finished"]
    refused(client.post("/api/games", json=full), 503, "holds its 3 games")   # just finished
    # bad input is refused as such, full or not (before: 503 first)
    refused(client.post("/api/games", json=dict(full, seat=5)), 400, "seat=5; allowed")
    refused(client.post("/api/games", json=dict(full, opponents=["nobody"])), 400,
            "unknown agent 'nobody'")
    refused(client.post("/api/games", json=dict(full, opponents=[])), 400, "0 opponents")
    now[0] += 150   # the finished game has rested: it makes room, and only for a good request
    refused(client.post("/api/games", json=dict(full, seat=5)), 400, "seat")
    refused(client.post("/api/games", json=dict(full, opponents=["nobody"])), 400, "nobody")
    assert len(tables) == 3 and client.get(f"/api/games/{views[1]['id']}").status_code == 200
    now[0] += 150
    fourth = new_game(client, seed=3)
    refused(client.get(f"/api/games/{views[1]['id']}"), 404, "never existed or was dropped")
    now[0] += 300
    client.get(f"/api/games/{views[2]['id']}")          # in use; views[0] rests
    client.get(f"/api/games/{fourth['id']}")
    now[0] += 400
    tables.hold(views[0]["id"])   # a request at work on it (a long search): kept
    refused(client.post("/api/games", json=full), 503, "holds its 3 games")
    tables.release(views[0]["id"])   # done now: used now
    now[0] += 601
    client.get(f"/api/games/{views[2]['id']}")
    client.get(f"/api/games/{fourth['id']}")
    fifth = new_game(client, seed=4)    # views[0], untouched for 601 s, makes room
    refused(client.get(f"/api/games/{views[0]['id']}"), 404, "untouched for 10")
    for v in (views[2], fourth, fifth):
        assert client.get(f"/api/games/{v['id']}").json()["hand"] == v["hand"]


def test_the_games_learned_agents_share_their_network():
    """Nine ppo-any at each of two tables hold one network between them (1.7 MB, not 18 of
    them): one client's many games cannot fill the server's memory with copies of it."""
    app = create_app()
    client = TestClient(app)
    views = [new_game(client, num_players=10, opponents=["ppo-any"] * 9, seed=s) for s in (1, 2)]
    nets = {id(a.net) for v in views for a in app.state.tables.get(v["id"]).agents.values()}
    assert len(nets) == 1


# ---- what the agents think -------------------------------------------------------------
def test_thinking_is_off_by_default_and_shows_a_learned_agents_probabilities(client):
    view = new_game(client, opponents=["ppo-basic-2p"], seed=2)
    end = play_out(client, view)
    agent_moves = [h for h in end["history"] if h["player"] == "ppo-basic-2p"]
    assert agent_moves and all(h["thinking"] is None for h in end["history"])
    shown = client.post(f"/api/games/{end['id']}/thinking", json={"show": True}).json()
    moves = [h for h in shown["history"] if h["player"] == "ppo-basic-2p"]
    for h in moves:
        t = h["thinking"]
        assert abs(sum(t["probs"].values()) - 1) < 1e-3 and isinstance(t["value"], float)
        assert h["text"].split(": ", 1)[1] == max(t["probs"], key=t["probs"].get)
    refused(client.post(f"/api/games/{end['id']}/thinking", json={"show": "yes"}), 400, "true or false")
    # rule-based agents report nothing
    end = play_out(client, new_game(client, thinking=True))
    assert all(h["thinking"] is None for h in end["history"])


def test_a_replay_says_from_which_decision_the_human_saw_what_the_agents_think(client):
    # before: every saved game's source was "ono-web", whether or not the human had seen
    # the agents' reports (which name cards of their hidden hands) while playing
    def saved_source(view, switch_at=None):
        steps = 0
        while not view["finished"]:
            if steps == switch_at:
                for show in (True, False, True):   # the first switch counts
                    view = client.post(f"/api/games/{view['id']}/thinking",
                                       json={"show": show}).json()
                at = view["decisions"]
            view = client.post(f"/api/games/{view['id']}/action",
                               json={"action": view["legal"][0]["name"], "move": view["move"]}).json()
            steps += 1
        if switch_at == "after":
            client.post(f"/api/games/{view['id']}/thinking", json={"show": True})
        rid = client.post(f"/api/games/{view['id']}/replay").json()["id"]
        source = client.get(f"/api/replays/{rid}").json()["source"]
        return source, (at if isinstance(switch_at, int) else None)

    kw = {"opponents": ["ppo-basic-2p"]}
    assert saved_source(new_game(client, seed=3, **kw)) == ("ono-web", None)
    assert saved_source(new_game(client, seed=3, **kw), "after") == ("ono-web", None)
    assert saved_source(new_game(client, seed=3, thinking=True, **kw))[0] == (
        "ono-web, what the agents think shown from decision 0")
    source, at = saved_source(new_game(client, seed=3, **kw), 2)
    assert at > 2 and source == f"ono-web, what the agents think shown from decision {at}"


def test_a_thinking_that_is_not_a_boolean_is_refused_in_jsons_words(client):
    # before: "allowed: True or False", Python's words to a JSON client
    for value in ("yes", 1, [True]):
        refused(client.post("/api/games", json={"rules": "basic", "num_players": 2,
                                                "opponents": ["greedy"], "thinking": value}),
                400, f"thinking={value!r}", "allowed: true or false")
    view = new_game(client)   # the switch during play says it alike (before: in words of its own)
    refused(client.post(f"/api/games/{view['id']}/thinking", json={"show": "yes"}), 400,
            "show='yes' (str); allowed: true or false")


def test_thinking_switched_on_during_play_shows_no_earlier_decisions(client):
    """Before: the log showed every earlier decision's report (naming cards the agent may
    still hold), while the replay's source said it was shown from the switch on."""
    view = new_game(client, opponents=["ppo-basic-2p"], seed=7)
    for _ in range(3):
        view = client.post(f"/api/games/{view['id']}/action",
                           json={"action": view["legal"][0]["name"], "move": view["move"]}).json()
    at = view["decisions"]
    view = client.post(f"/api/games/{view['id']}/thinking", json={"show": True}).json()
    agent = [h for h in view["history"] if h["player"] == "ppo-basic-2p"]
    assert agent and all(h["decision"] < at and h["thinking"] is None for h in agent)
    while not view["finished"] and not any(h["thinking"] for h in view["history"]):
        view = client.post(f"/api/games/{view['id']}/action",
                           json={"action": view["legal"][0]["name"], "move": view["move"]}).json()
    assert not view["finished"]   # an agent's decision after the switch: shown, none before it
    assert all((h["thinking"] is not None) == (h["decision"] >= at)
               for h in view["history"] if h["player"] == "ppo-basic-2p")
    end = play_out(client, view)   # the game over: every decision the log keeps
    assert all(h["thinking"] is not None for h in end["history"] if h["player"] == "ppo-basic-2p")


# ---- replays ---------------------------------------------------------------------------
def test_a_finished_game_is_saved_viewed_and_downloaded_as_a_replay(client, monkeypatch):
    view = new_game(client, opponents=["ppo-basic-2p"], seed=8)
    gid = view["id"]
    refused(client.post(f"/api/games/{gid}/replay"), 409, "not over")
    end = play_out(client, view)
    # before: a body was taken and ignored
    refused(client.post(f"/api/games/{gid}/replay", json={"title": "mine"}), 400, "takes no "
            "request body")
    saved = client.post(f"/api/games/{gid}/replay").json()
    assert saved["players"] == ["you", "ppo-basic-2p"] and saved["winners"] == end["result"]["winners"]
    # the public list does not name the table (before: "web game <id>", the key to the table)
    assert all(gid not in json.dumps(x) for x in client.get("/api/replays").json())
    assert saved["title"].startswith("web game ")
    assert client.get("/api/replays").json()[0]["id"] == saved["id"]
    assert saved["rules"] == "basic" and saved["rules_title"] == "basic rules"
    # a game whose options change the preset is listed as the view heads it (before: "classic")
    custom = new_game(client, rules="classic", options={"hand_size": 5}, seed=2)
    play_out(client, custom)
    listed_custom = client.post(f"/api/games/{custom['id']}/replay").json()
    assert listed_custom["rules_title"] == "custom rules based on classic"
    # saved again: the same replay (before: another copy each time, pushing others out)
    listed = len(client.get("/api/replays").json())
    assert client.post(f"/api/games/{gid}/replay").json()["id"] == saved["id"]
    assert len(client.get("/api/replays").json()) == listed
    rv = client.get(f"/api/replays/{saved['id']}").json()
    assert len(rv["steps"]) == saved["decisions"] + 1 == len(rv["decisions"]) + 1
    table = client.app.state.tables.get(gid)
    assert rv["steps"][-1]["hands"] == table.game.to_dict(0)["hands"]   # every hand shown
    assert rv["steps"][0]["hands"][1] != []
    assert any(d["thinking"] for d in rv["decisions"] if d["seat"] == 1)
    f = client.get(f"/api/replays/{saved['id']}/file")
    assert "attachment" in f.headers["content-disposition"]
    assert Replay.from_json(f.text).to_dict() == table.replay.to_dict()
    refused(client.get("/api/replays/0000"), 404, "no replay")
    # every GET route answers HEAD too, with no body (before: 405 on all but the page's own)
    for path in ("/api/options", f"/api/games/{gid}", "/api/replays", f"/api/replays/{saved['id']}",
                 f"/api/replays/{saved['id']}/file", "/"):
        head = client.head(path)
        assert head.status_code == 200 and head.content == b"", path
    assert client.head("/api/replays/0000").status_code == 404
    # a replay's HEAD builds nothing: neither its positions nor its file
    replays = client.app.state.replays
    monkeypatch.setattr(replays, "cached", lambda rid: pytest.fail("built"))
    monkeypatch.setattr(replays, "text", lambda rid: pytest.fail("unpacked"))
    for path in (f"/api/replays/{saved['id']}", f"/api/replays/{saved['id']}/file"):
        head = client.head(path)
        assert head.status_code == 200 and "content-length" not in head.headers


def test_replay_uploads_are_checked(client, monkeypatch):
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=10, seed=0,
                  rating=False, record=1).replays[0]
    ok = client.post("/api/replays", headers=JSON, content=r.to_json())
    assert ok.status_code == 200 and ok.json()["source"] == "ono-arena"
    # the same text again is the upload kept, found before any replaying (before: every
    # position replayed again, seconds for a long one, on the replays' one worker)
    from ono_env.apps.web import server
    monkeypatch.setattr(server, "replay_positions", lambda *a, **k: pytest.fail("replayed"))
    again = client.post("/api/replays", headers=JSON, content=r.to_json())
    assert again.status_code == 200 and again.json() == ok.json()   # its title too
    monkeypatch.undo()
    other = run_arena(["greedy", "random"], "basic", num_players=2, num_games=10, seed=1,
                      rating=False, record=1).replays[0]
    # numbered, as in the list (before: every upload was titled "uploaded")
    second = client.post("/api/replays", headers=JSON, content=other.to_json()).json()
    assert (ok.json()["title"], second["title"]) == ("upload 1", "upload 2")
    assert [x["title"] for x in client.get("/api/replays").json()] == ["upload 2", "upload 1"]
    d = r.to_dict()
    d["result"]["winner"] = 1 - d["result"]["winner"]
    # named as its reading's errors name it, and the results as key=value (before: "replay:
    # the actions end with {'winner': 1, ...}", a Python dict)
    assert refused(client.post("/api/replays", headers=JSON, content=json.dumps(d)), 400) == (
        f"uploaded replay: the actions end with winner={1 - d['result']['winner']}; the replay "
        f"says winner={d['result']['winner']}")
    d = r.to_dict()
    d["actions"][0] = "challenge"
    refused(client.post("/api/replays", headers=JSON, content=json.dumps(d)), 400,
            "uploaded replay: actions[0]", "is not legal")
    refused(client.post("/api/replays", headers=JSON, content=b"\xff\xfe"), 400, "UTF-8")
    refused(client.post("/api/replays", headers=JSON, content=b"[]"), 400, "a replay is a JSON object")
    # a game still on (its first actions, and the position they reach as the result): no writer
    # records one, and the viewer would call it cut at the decision limit
    from ono_env.replay import final_result, replay_positions
    d = r.to_dict()
    d["actions"] = d["actions"][:6]
    if isinstance(d.get("thinking"), list):
        d["thinking"] = d["thinking"][:6]
    part = Replay.from_dict(r.to_dict())
    part.actions, part.thinking = part.actions[:6], part.thinking[:6]
    d["result"] = final_result(replay_positions(part, check_result=False)[-1])
    refused(client.post("/api/replays", headers=JSON, content=json.dumps(d)), 400,
            "the game is neither terminated nor truncated")
    # a number past Python's digits limit: named as the upload's, not as a server setting
    import sys
    digits = sys.get_int_max_str_digits()
    body = '{"max_decisions": ' + "9" * (digits + 1) + "}"
    refused(client.post("/api/replays", headers=JSON, content=body), 400,
            f"uploaded replay: replay JSON is malformed: a number of more than {digits:,} digits")
    # a key given twice, whatever it is called, is said as such
    body = '{"integer string conversion": 1, "integer string conversion": 2}'
    refused(client.post("/api/replays", headers=JSON, content=body), 400,
            "the key 'integer string conversion' is given twice")
    # a key that no JSON answer can hold (a lone surrogate; before: a 500) or a terminal's
    # escape codes is named with '?' for what cannot be shown
    d = r.to_dict()
    d["\ud800\x1b[2J"] = 1
    refused(client.post("/api/replays", headers=JSON, content=json.dumps(d)), 400,
            "??[2J: unknown key")


def test_the_server_lists_replay_folders_and_offers_model_files_from_its_command_line(tmp_path):
    import shutil

    from ono_env.agents.learned import shipped_models
    result = run_arena(["greedy", "random"], "basic", num_players=2, num_games=20, seed=0,
                       rating=False, record=2)
    for k, r in enumerate(result.replays):
        r.save(tmp_path / "rec" / f"replay-{k}.json")
    model = tmp_path / "mine.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], model)
    client = TestClient(create_app(models=[str(model)], replay_dirs=[str(tmp_path / "rec")]))
    listed = client.get("/api/replays").json()
    assert sorted(x["title"] for x in listed) == ["replay-0.json", "replay-1.json"]
    assert "path" not in json.dumps(listed) and str(tmp_path) not in json.dumps(listed)
    assert "mine" in client.get("/api/options").json()["agents"]
    # two folders: each title names its folder (before: two "replay-0.json")
    result.replays[0].save(tmp_path / "other" / "replay-0.json")
    both = TestClient(create_app(replay_dirs=[str(tmp_path / "rec"), str(tmp_path / "other")]))
    assert sorted(x["title"] for x in both.get("/api/replays").json()) == [
        "other/replay-0.json", "rec/replay-0.json", "rec/replay-1.json"]
    view = new_game(client, opponents=["mine"])
    assert view["players"][1]["label"] == "mine"
    refused(client.post("/api/games", json={"rules": "basic", "num_players": 2,
                                            "opponents": [str(model)]}), 400, "unknown agent")
    # two long names alike in their first 80 characters: two labels, shortened as replays
    # shorten them (before: both cut to the same first 80, and the second file refused)
    longs = [tmp_path / ("m" * 90 + f"_{k}.safetensors") for k in "ab"]
    for path in longs:
        shutil.copy(shipped_models()["ppo-basic-2p"], path)
    agents = TestClient(create_app(models=[str(p) for p in longs])).get("/api/options").json()["agents"]
    labels = [clean_label(p.stem) for p in longs]
    assert labels[0] != labels[1] and all(label in agents for label in labels)


def test_a_model_file_named_as_a_search_agent_plays_as_that_model(tmp_path):
    """``ono-web --model "pimc:8.safetensors"`` offers the file by that label (a file, not a
    search), and a game seats it: before, the game was refused as "not a search agent
    label", and counted among the searching games."""
    import shutil

    from ono_env.agents.learned import shipped_models
    from ono_env.apps.web.server import searches

    model = tmp_path / "pimc:8.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], model)
    client = TestClient(create_app(models=[str(model)]))
    offered = client.post("/api/agents", json={"rules": "basic", "num_players": 2}).json()
    assert "pimc:8.safetensors" in offered["agents"]
    view = new_game(client, opponents=["pimc:8.safetensors"], seat=1, thinking=True)
    assert view["players"][0]["label"] == "pimc:8.safetensors"
    assert view["history"] and view["history"][0]["thinking"]["probs"]   # a policy's report
    assert not searches(["pimc:8.safetensors"])


def test_a_model_that_no_rules_can_play_is_refused_at_start(tmp_path, capsys):
    """As ono-arena, ono-play, ono-train and ono-export refuse it (before: offered, then
    refused at every table that seated it, and one of another action table told "choose 2
    players" at a table of 4)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    from ono_env.agents.learned import shipped_models

    src = str(shipped_models()["ppo-basic-2p"])
    with safe_open(src, "np") as f:
        meta = json.loads(f.metadata()["ono_env"])
    for key, value, words in (("observation_version", 3, "trained on observation layout v3"),
                              ("action_names", meta["action_names"][::-1],
                               "trained with a different action table")):
        bad = tmp_path / f"{key}.safetensors"
        save_file(load_file(src), str(bad), metadata={"ono_env": json.dumps({**meta, key: value})})
        with pytest.raises(ValueError, match=f"^model '{re.escape(str(bad))}': {words}"):
            create_app(models=[str(bad)])
        assert main(["--port", "0", "--model", str(bad)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and words in err[0], err


def test_a_shipped_policys_own_file_or_a_copy_is_that_agent_offered_once(tmp_path):
    """As model_label names it, and as ono-arena plays it (before: refused at start, "its
    label 'ppo-basic-2p' is taken by an agent of that name")."""
    import io
    import shutil

    from ono_env.agents.learned import shipped_models

    own = shipped_models()["ppo-basic-2p"]
    copy = tmp_path / "ppo-basic-2p.safetensors"
    shutil.copy(own, copy)
    log = io.StringIO()
    client = TestClient(create_app(models=[str(own), str(copy)], log=log))
    assert log.getvalue().count("is the shipped policy ppo-basic-2p (its file, or a copy); it "
                                "is offered once, as ppo-basic-2p") == 2
    assert client.get("/api/options").json()["agents"].count("ppo-basic-2p") == 1
    assert new_game(client, opponents=["ppo-basic-2p"])["players"][1]["label"] == "ppo-basic-2p"
    other = tmp_path / "other" / "ppo-basic-2p.safetensors"   # another model of that name:
    other.parent.mkdir()                                      # its whole file name, no note
    shutil.copy(shipped_models()["ppo-classic-2p"], other)
    log = io.StringIO()
    client = TestClient(create_app(models=[str(other)], log=log))
    assert "ppo-basic-2p.safetensors" in client.get("/api/options").json()["agents"]
    assert log.getvalue() == ""


def test_a_model_labelled_you_is_refused_and_one_given_twice_is_offered_once(tmp_path):
    """``you`` is the human's seat: before, a model file of that name sat beside it, and the
    log, the replay and the viewer's "your next turn" had two players named you. The same
    file given twice is noted and offered once, as a replay folder is (before: refused as
    a label "taken by an agent of that name")."""
    import io
    import shutil

    from ono_env.agents.learned import shipped_models

    for name in ("you", "mine"):
        shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / f"{name}.safetensors")
    with pytest.raises(ValueError, match="its label 'you' names the human's seat"):
        create_app(models=[str(tmp_path / "you.safetensors")])   # ono-web: one line, status 2
    log = io.StringIO()
    mine = str(tmp_path / "mine.safetensors")
    client = TestClient(create_app(models=[mine, str(tmp_path / ".." / tmp_path.name /
                                                     "mine.safetensors")], log=log))
    assert "names a file given before; it is offered once" in log.getvalue()
    assert client.get("/api/options").json()["agents"].count("mine") == 1
    assert new_game(client, opponents=["mine"])["players"][1]["label"] == "mine"


def test_a_model_file_given_without_folder_or_suffix_seats_and_two_of_one_label_are_told_apart(
        tmp_path, monkeypatch):
    """``ono-web --model best`` (a model file named ``best``, in the folder it runs in) is
    offered and seated: before, it was offered, and every game with it was refused as an
    "unknown agent 'best'" (the table read the bare name as an agent's). Two files of one
    label are refused naming the other file (before: "taken by an agent of that name")."""
    import shutil

    from ono_env.agents.learned import shipped_models

    shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / "best")
    monkeypatch.chdir(tmp_path)
    client = TestClient(create_app(models=["best"]))
    assert "best" in client.post("/api/agents", json={"rules": "basic", "num_players": 2}).json()["agents"]
    assert new_game(client, opponents=["best"])["players"][1]["label"] == "best"
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / d / "m.safetensors")
    with pytest.raises(ValueError, match=r"^model 'd2/m.safetensors': its label 'm' is taken by "
                       r"the model 'd1/m.safetensors', given before"):
        create_app(models=["d1/m.safetensors", "d2/m.safetensors"])


def test_the_page_and_its_assets_are_served_from_the_package(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>ONO! table</title>" in page.text
    for asset in ("app.js", "style.css"):
        r = client.get(f"/static/{asset}")
        assert r.status_code == 200 and len(r.text) > 1000
    for text in (page.text, client.get("/static/app.js").text, client.get("/static/style.css").text):
        assert "http://" not in text.replace("http://127.0.0.1", "") and "https://" not in text
    assert client.get("/static/../server.py").status_code == 404


def _node(script: str) -> Any:
    """What ``script`` (JavaScript, given on stdin: a view is too long for an argument) logs
    as JSON, run by node; the test is skipped where node is not installed."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: app.js cannot be run")
    done = subprocess.run([node], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _score_lines(app_js: str, calls: list[tuple[str, dict]]) -> list[str]:
    """What app.js's ``drawScores`` writes, called as app.js calls it (each call's line of
    app.js, read from the file) with the given ``t`` / ``r`` and ``s`` objects, run by node."""
    import re

    fn = re.search(r"^function drawScores\(.*?^}\n", app_js, re.S | re.M)
    assert fn, "drawScores is not in app.js"
    script = [fn[0], "const targets = {}; const $ = (id) => (targets[id] ??= {});",
              "const out = [];"]
    for target, objects in calls:
        line = re.search(rf"^\s*(drawScores\(\$\(\"{target}\"\).*;)$", app_js, re.M)
        assert line, f"no call of drawScores for {target} in app.js"
        names = ", ".join(objects)
        script.append(f"(({names}) => {{ {line[1]} }})(...{json.dumps(list(objects.values()))});"
                      f" out.push($({json.dumps(target)}).textContent);")
    script.append("console.log(JSON.stringify(out));")
    return _node("\n".join(script))


def _winners_line(app_js: str, target: str, **objects) -> str:
    """What app.js writes into ``target`` (``result``, ``rp-result``) at a game's end: its
    ``winnersText`` call there, read from the file, run by node with ``objects`` (``t``, ``r``)."""
    import re

    fn = re.search(r"^function winnersText\(.*?^}\n", app_js, re.S | re.M)
    call = re.search(rf'\$\("{target}"\)\.textContent = (winnersText\(.*?\))\s*\n\s*\|\|', app_js, re.S)
    assert fn and call, "winnersText or its call is not in app.js"
    names = ", ".join(objects)
    return _node(f"{fn[0]}\nconsole.log(JSON.stringify((({names}) => {call[1]})"
                 f"(...{json.dumps(list(objects.values()))})));")


def test_a_penalty_scored_match_is_said_won_on_the_lowest_total(client):
    """As the terminal says it (before: "P0 (random) wins" right under a last round that P1
    won, at the table and in the replay viewer)."""
    import random

    app_js = client.get("/static/app.js").text
    for seed in range(40):   # a match won on the lowest total by a seat not the human's
        pick = random.Random(seed)
        view = play_out(client, new_game(client, rules="stacking", num_players=3, seed=seed,
                                         options={"target_score": 60},
                                         opponents=["random", "random"]),
                        pick=lambda legal, rnd=pick: rnd.choice(legal)["name"])
        (winner,) = view["result"]["winners"] or (None,)
        if winner is not None and winner != view["seat"] and view["result"]["lowest_total"]:
            break
    else:
        pytest.fail("no such match in 40 deals")
    label = view["players"][winner]["label"]
    assert _winners_line(app_js, "result", t=view) == f"P{winner} ({label}) wins on the lowest total"
    saved = client.post(f"/api/games/{view['id']}/replay").json()
    shown = client.get(f"/api/replays/{saved['id']}").json()
    assert shown["lowest_total"] is True
    assert _winners_line(app_js, "rp-result", r=shown) == (
        f"P{winner} ({shown['players'][winner]}) wins on the lowest total")
    plain = play_out(client, new_game(client))   # basic: its last round's winner, said plainly
    assert plain["result"]["lowest_total"] is False
    assert _winners_line(app_js, "result", t=plain) in ("You win!", "P1 (greedy) wins")


def test_the_score_line_names_the_rounds_dealt_and_the_last_once_the_match_is_over(client):
    """Before: a finished match's score line, at the table and in its replay, named a round
    one past its last (the engine counts the rounds ended; the line added one for the round
    being played)."""
    view = new_game(client, rules="wikipedia", options={"target_score": 200})
    app_js = client.get("/static/app.js").text
    assert _score_lines(app_js, [("scores", {"t": view})]) == [
        "round 1 \u00b7 match to 200 \u00b7 scores P0 0  P1 0"]
    seen: list[str] = []
    end = play_out(client, view, seen=seen)
    rounds = sorted({int(e.split()[1]) for e in seen + end["events"] if e.startswith("round ")})
    assert end["result"]["winners"] and len(rounds) >= 2 and rounds == list(range(1, len(rounds) + 1))
    scores = "  ".join(f"P{q} {v}" for q, v in enumerate(end["scores"]))
    rid = client.post(f"/api/games/{end['id']}/replay").json()["id"]
    replay = client.get(f"/api/replays/{rid}").json()
    assert _score_lines(app_js, [("scores", {"t": end}), ("rp-scores", {
        "r": replay, "s": replay["steps"][-1]})]) == [
        f"round {rounds[-1]} \u00b7 match to 200 \u00b7 scores {scores}"] * 2


# ---- the console script ----------------------------------------------------------------
@pytest.mark.parametrize("args, fragment", [
    (["--port", "70000"], "out of range; allowed: 0 to 65,535"),
    (["--model", "nothere.safetensors"], "nothere.safetensors"),
    (["--replays", "no-such-folder"], "not a folder"),
    # before: both listened on every address, '' also serving requests without a Host
    (["--host", "", "--port", "0"], "--host '': no address"),
    (["--host", "0", "--port", "0"], "--host '0' listens on every address (0.0.0.0)"),
    # an empty path is not the current folder (before: its *.json were listed)
    (["--replays", ""], "--replays ''; allowed: a folder's path"),
    (["--model", ""], "--model ''; allowed: a model file's path"),
])
def test_ono_web_refuses_bad_arguments_in_one_line(capsys, args, fragment):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ono-web: error:") and fragment in err


def test_both_hosts_of_every_address_are_named_and_the_address_printed_opens(monkeypatch, capsys):
    """``--host ::`` serves every address as ``0.0.0.0`` does, and ``--help`` says so (before:
    "0.0.0.0 ..., and only it"); the address printed is one a browser opens, this machine's
    loopback (before: http://0.0.0.0:PORT/ or http://[::]:PORT/)."""
    import socket

    import uvicorn

    from ono_env.apps.web.server import build_parser

    assert "0.0.0.0 (IPv4) or :: (IPv6) serves every address" in " ".join(
        build_parser().format_help().split())
    monkeypatch.setattr(uvicorn.Server, "run",   # not served: the line printed is the test
                        lambda self, sockets=None: [s.close() for s in sockets or ()])
    # nor is logging set up: uvicorn's dictConfig closes every handler of the process, the
    # test runner's own log file among them (under pytest-xdist the worker's later tests
    # then failed with "I/O operation on closed file")
    monkeypatch.setattr(uvicorn.Config, "configure_logging", lambda self: None)
    for host, shown in (("0.0.0.0", "127.0.0.1"), ("::", "[::1]"))[:1 + socket.has_ipv6]:
        assert main(["--host", host, "--port", "0"]) == 0
        line = capsys.readouterr().out
        assert line.startswith(f"ono-web: open http://{shown}:") and "every address" in line


def test_a_seed_the_server_drew_is_shown_only_at_the_end(client):
    view = client.post("/api/games", json={"rules": "basic", "num_players": 2,
                                           "opponents": ["greedy"]}).json()
    assert view["seed"] is None                     # it would deal every hand
    end = play_out(client, view)
    assert isinstance(end["seed"], int)
    assert new_game(client, seed=77)["seed"] == 77  # the browser's own seed it knows


def test_the_server_draws_its_seeds_from_fresh_seed(client, monkeypatch):
    # a client that could deal every seed would find the deal of its own hand, and with it
    # every hand and the stock: the server's seeds are fresh_seed's 53 bits, not fewer
    import ono_env.apps.web.table as table_module

    monkeypatch.setattr(table_module, "fresh_seed", lambda: 2**52 + 3)
    view = client.post("/api/games", json={"rules": "basic", "num_players": 2,
                                           "opponents": ["greedy"]}).json()
    assert view["seed"] is None
    assert play_out(client, view)["seed"] == 2**52 + 3


def test_a_game_keeps_only_the_history_a_view_shows_and_a_match_is_cut_at_20000_decisions(client):
    """Before: a game kept every decision's history entry (thinking included) beside its
    replay, and a match ran to the engine's 50,000 decisions: one game of nine ppo-any held
    44 MB, 200 of them about 8.7 GB."""
    from ono_env import cards as C
    from ono_env.apps.web.table import HISTORY, WEB_MAX_DECISIONS
    one_round = new_game(client)
    assert client.app.state.tables.get(one_round["id"]).game.max_decisions == 5_000   # the engine's
    view = new_game(client, rules="classic", opponents=["ppo-classic-2p"], thinking=True)
    table = client.app.state.tables.get(view["id"])
    assert table.game.max_decisions == WEB_MAX_DECISIONS == 20_000   # a match: 50,000 before
    view = play_out(client, view)
    assert len(table.replay.actions) > HISTORY and view["deal"] == []
    assert len(table.history) == len(view["history"]) == HISTORY
    assert [h["text"].split(": ", 1)[1] for h in view["history"]] == [
        C.action_name(a) for a in table.replay.actions[-HISTORY:]]   # the last 40 decisions


def test_a_registered_agent_that_cheats_is_marked_in_the_setup_list():
    """Before: the setup list's marks were the oracles alone: a registered agent declaring
    cheating was offered unmarked (its table's label was marked once dealt)."""
    from ono_env.agents import register_agent
    from ono_env.agents.registry import unregister_agent

    class Peeker:
        cheating = True

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    class OnlyTwo:   # made for 2 players only: asked where it is made
        cheating = True

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    def only_two(rules):
        if rules.num_players != 2:
            raise ValueError("2 players only")
        return OnlyTwo()

    register_agent("peeker-test", lambda rules: Peeker())
    register_agent("two-only-test", only_two)
    try:
        options = TestClient(create_app()).get("/api/options").json()
        assert {"peeker-test", "two-only-test"} <= set(options["agents"])
        assert {"peeker-test", "two-only-test", "oracle-hands", "oracle"} <= set(options["cheating"])
        assert not {"random", "greedy", "ppo-any"} & set(options["cheating"])
    finally:
        unregister_agent("peeker-test")
        unregister_agent("two-only-test")


def test_a_failing_agent_is_reported_and_the_human_cannot_play_its_turn(caplog):
    from ono_env.agents.registry import _REGISTRY, register_agent

    class Broken:
        uses_observation = True

        def act(self, obs, mask, rng):
            raise RuntimeError("out of order")

    register_agent("broken-test-agent", lambda rules: Broken())
    try:
        client = TestClient(create_app())
        for seed in range(20):       # a deal where the human moves first
            r = client.post("/api/games", json={"rules": "basic", "num_players": 2, "seed": seed,
                                                "opponents": ["broken-test-agent"]})
            if r.status_code == 200:
                break
            refused(r, 500, "agent 'broken-test-agent' (P1) failed (RuntimeError; the server's log")
            # the error's text may name the agent's legal actions: it stays in the log
            assert "out of order" not in r.text
        view = r.json()
        while True:        # the human's decisions, until the turn passes to the agent
            r = client.post(f"/api/games/{view['id']}/action",
                            json={"action": view["legal"][0]["id"], "move": view["move"]})
            if r.status_code != 200:
                break
            view = r.json()
        refused(r, 500, "agent 'broken-test-agent' (P1) failed")
        # the error's text is in the server's log, under the web table's module path
        assert any(rec.name == "ono_env.apps.web" and "out of order" in rec.exc_text
                   for rec in caplog.records)
        now = client.get(f"/api/games/{view['id']}").json()
        assert now["current"] == 1 and now["legal"] == []
        refused(client.post(f"/api/games/{view['id']}/action",
                            json={"action": "draw", "move": now["move"]}),
                409, "it is P1's turn, not yours")
    finally:
        _REGISTRY.pop("broken-test-agent", None)


def test_other_host_names_are_refused_when_hosts_are_set():
    client = TestClient(create_app(allowed_hosts=["127.0.0.1", "localhost"]),
                        base_url="http://evil.example")
    assert client.get("/api/options").status_code == 400
    ok = TestClient(create_app(allowed_hosts=["127.0.0.1", "localhost"]),
                    base_url="http://127.0.0.1:8000")
    assert ok.get("/api/options").status_code == 200
    # a port of digits alone (before: all before the last colon was the name, and these
    # passed as localhost or 127.0.0.1)
    for host in ("localhost:1@evil.example", "127.0.0.1:x@evil.example", "localhost:evil.example"):
        r = ok.get("/api/options", headers={"Host": host})
        assert r.status_code == 400 and "is not served here" in r.json()["error"], host
    for host in ("localhost", "localhost:8000", "127.0.0.1"):
        assert ok.get("/api/options", headers={"Host": host}).status_code == 200, host


def test_long_replay_uploads_are_refused_before_any_work(client):
    from ono_env.apps.web.server import MAX_REPLAY_DECISIONS
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=10, seed=0,
                  rating=False, record=1).replays[0]
    d = r.to_dict()
    n = MAX_REPLAY_DECISIONS + 1
    d["actions"] = ["draw"] * n
    d["thinking"] = [None] * n
    d["max_decisions"] = d["result"]["decisions"] = n
    refused(client.post("/api/replays", headers=JSON, content=json.dumps(d)), 413,
            f"the server takes at most {MAX_REPLAY_DECISIONS}")


def test_a_bad_file_in_a_replay_folder_is_skipped_with_a_note(tmp_path):
    import io
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=10, seed=0,
                  rating=False, record=1).replays[0]
    r.save(tmp_path / "good.json")
    (tmp_path / "bad.json").write_text("{}")
    log = io.StringIO()
    client = TestClient(create_app(replay_dirs=[str(tmp_path)], log=log))
    assert [x["title"] for x in client.get("/api/replays").json()] == ["good.json"]
    assert "bad.json skipped" in log.getvalue() and "missing" in log.getvalue()
    # a file name's escape codes do not reach the operator's terminal
    (tmp_path / "x\x1b[2J.json").write_text("{}")
    log = io.StringIO()
    TestClient(create_app(replay_dirs=[str(tmp_path)], log=log))
    assert "x?[2J.json skipped" in log.getvalue() and "\x1b" not in log.getvalue()
    if Path("/proc/self/mem").exists():   # a regular file whose read fails (EIO)
        # before: the OSError stopped the server from starting
        (tmp_path / "unread.json").symlink_to("/proc/self/mem")
        log = io.StringIO()
        client = TestClient(create_app(replay_dirs=[str(tmp_path)], log=log))
        assert [x["title"] for x in client.get("/api/replays").json()] == ["good.json"]
        assert "unread.json skipped: cannot read replay file" in log.getvalue()


def test_search_agents_play_at_the_table_and_show_their_action_values(client):
    assert {"pimc", "ismcts", "oracle"} <= set(client.get("/api/options").json()["agents"])
    view = new_game(client, opponents=["pimc:8"], seed=4, thinking=True)
    end = play_out(client, view)
    moves = [h for h in end["history"] if h["player"] == "pimc:8"]
    assert moves
    for h in moves:   # a forced decision (one legal action) is taken without search: no values
        values = h["thinking"]["values"]
        assert (not values or h["text"].split(": ", 1)[1] in values) and h["thinking"]["probs"] == {}
        assert all(v > -1 for v in values.values())
    assert any(h["thinking"]["values"] for h in moves)
    cheat = new_game(client, opponents=["oracle:4"], seed=4)
    assert cheat["players"][1]["label"] == "oracle:4 (cheating)"
    refused(client.post("/api/games", json={"rules": "basic", "num_players": 2,
                                            "opponents": ["pimc:0"]}), 400, "pimc:0")


def _hold_agents(monkeypatch, label, armed, released, entered):
    """Make the server's agent ``label`` play as greedy, but once ``armed`` is set hold each
    of its decisions (calling ``entered()``) until ``released`` is set."""
    from ono_env.apps.web import server

    factory = server.default_agent_factory

    class Held:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def act(self, *args, **kwargs):
            if armed.is_set():
                entered()
                released.wait(60)
            return self.inner.act(*args, **kwargs)

    def held_factory(rules, allowed, models=None):
        build = factory(rules, allowed, models)
        return lambda name: Held(build("greedy")) if name == label else build(name)

    monkeypatch.setattr(server, "default_agent_factory", held_factory)


def test_requests_waiting_on_a_busy_table_leave_the_server_to_the_others(monkeypatch):
    """One client's requests queued behind its table's thinking agents hold no thread: before,
    60 of them took every thread of the pool while the agents thought, and every other
    client's requests waited until they were done."""
    import threading

    entered, released, armed = threading.Event(), threading.Event(), threading.Event()
    _hold_agents(monkeypatch, "slow", armed, released, entered.set)
    asked: list[int] = []   # each table gate's acquire() calls, in the order the gates are made

    class Gate(asyncio.Lock):   # the server's per-table gate, counting who waits at it
        def __init__(self) -> None:
            super().__init__()
            self.slot = len(asked)
            asked.append(0)

        async def acquire(self):
            asked[self.slot] += 1
            return await super().acquire()

    monkeypatch.setattr(asyncio, "Lock", Gate)
    safety = threading.Timer(30, released.set)   # the old server would wait for this
    safety.start()
    try:
        with TestClient(create_app()) as client:
            view = new_game(client, opponents=["slow"], seat=0)   # the agents play to seat 0
            assert view["current"] == 0 and not view["finished"]
            other = new_game(client)
            armed.set()
            out: list[int] = []
            act = threading.Thread(target=lambda: out.append(client.post(
                f"/api/games/{view['id']}/action",
                json={"action": view["legal"][0]["name"], "move": view["move"]}).status_code))
            act.start()
            assert entered.wait(30)
            getters = [threading.Thread(target=lambda: out.append(
                client.get(f"/api/games/{view['id']}").status_code)) for _ in range(60)]
            for t in getters:
                t.start()
            deadline = time.monotonic() + 60   # the 60 requests reach the server and wait
            while max(asked, default=0) < 61 and time.monotonic() < deadline:   # at the table
                time.sleep(0.02)
            assert max(asked) == 61   # the move and the 60 requests after it
            assert client.get("/api/options").status_code == 200
            assert client.get("/api/replays").status_code == 200
            assert client.get(f"/api/games/{other['id']}").json()["id"] == other["id"]
            assert not released.is_set()   # answered while the table's agent still thinks
            released.set()
            for t in [act, *getters]:
                t.join(60)
            assert out == [200] * 61
    finally:
        released.set()
        safety.cancel()


def _as_clients(app):
    """``app`` with each request's client address taken from its ``x-client`` header (the
    test client sends every request from one address)."""
    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            named = dict(scope["headers"]).get(b"x-client")
            if named is not None:
                scope = dict(scope, client=(named.decode(), 50000))
        await app(scope, receive, send)
    wrapped.state = app.state
    return wrapped


def _searching_deals(client, seeds, clients, out):
    """Threads (not started) that each deal a 2-player `basic` game against ``pimc:1`` from
    seed ``seeds[k]`` as client address ``clients[k]``, appending the status to ``out``."""
    import threading

    def deal(seed, who):
        out.append(client.post("/api/games", json={
            "rules": "basic", "num_players": 2, "opponents": ["pimc:1"], "seat": 1, "seed": seed},
            headers={"x-client": who}).status_code)
    return [threading.Thread(target=deal, args=(s, who), daemon=True)
            for s, who in zip(seeds, clients)]


def test_searching_games_leave_a_worker_to_the_other_games(monkeypatch):
    """However many games with a search agent think at once, they hold at most
    SEARCH_WORKERS of the WEB_WORKERS threads: before, four such games held all four, and a
    new game of another client (whose deal runs its agents) waited until one was done."""
    import threading

    from ono_env.apps.web import server

    released, armed = threading.Event(), threading.Event()
    inside, count = threading.Lock(), [0]

    def entered():
        with inside:
            count[0] += 1
    _hold_agents(monkeypatch, "pimc:1", armed, released, entered)   # a search label
    safety = threading.Timer(30, released.set)   # the old server would wait for this
    safety.start()
    # deals whose first decision is the agent's (seat 0), so that each game's deal runs it
    rules = RuleSet.preset("basic", num_players=2)
    seeds = [s for s in range(100) if VecGame(rules, 1, seed=s).current_player[0] == 0][:4]
    try:
        with TestClient(_as_clients(create_app())) as client:
            armed.set()
            out: list[int] = []
            # four clients: one client's searching games think one at a time (the next test)
            deals = _searching_deals(client, seeds, [f"10.0.0.{s}" for s in seeds], out)
            for t in deals:
                t.start()
            try:
                limit = server.WEB_WORKERS - 1   # the searches' places: one worker stays free
                deadline = time.monotonic() + 30
                while count[0] < limit and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)   # the fourth game's request reaches the server and waits
                held = count[0]
                # another client's game is dealt while the searches think
                other = new_game(client, opponents=["greedy"], seat=1)
                dealt_at_once = not released.is_set()
            finally:   # the held requests end before the client closes, whatever failed
                released.set()
                for t in deals:
                    t.join(60)
            assert held == limit and dealt_at_once and not other["finished"]
            assert out == [200] * 4
    finally:
        released.set()
        safety.cancel()


def test_one_clients_searching_games_think_one_at_a_time(monkeypatch):
    """A search's worlds bound its time only for given rules (pimc:512 took 20 s a decision
    at 10 players with 40 of each wild), so one client's searching games take their turns:
    before, one client's three such games held every search place, and every other client's
    searching game waited for them."""
    import threading

    released, armed = threading.Event(), threading.Event()
    inside, count = threading.Lock(), [0]

    def entered():
        with inside:
            count[0] += 1
    _hold_agents(monkeypatch, "pimc:1", armed, released, entered)
    safety = threading.Timer(30, released.set)
    safety.start()
    rules = RuleSet.preset("basic", num_players=2)
    seeds = [s for s in range(100) if VecGame(rules, 1, seed=s).current_player[0] == 0][:3]
    try:
        with TestClient(_as_clients(create_app())) as client:
            armed.set()
            out: list[int] = []
            deals = _searching_deals(client, seeds, ["10.0.0.1", "10.0.0.1", "10.0.0.2"], out)
            for t in deals:
                t.start()
            try:
                deadline = time.monotonic() + 30
                while count[0] < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)   # the first client's second game would have entered by now
                held = count[0]
                waiting = not released.is_set()
            finally:
                released.set()
                for t in deals:
                    t.join(60)
            assert held == 2 and waiting   # one game of each client
            assert out == [200] * 3
    finally:
        released.set()
        safety.cancel()


def test_a_stopping_server_starts_no_more_work_and_answers_503(monkeypatch, search_turns):
    """Told to stop (``ono-web`` sets ``app.state.stopping`` on Ctrl-C or SIGTERM), a game's
    agents play no decision after the one under way, a request queued behind it starts
    nothing, and a new one is answered 503 at once: before, the server ran on until every
    game's agents had played (30 s for one 10-player deal of searches), queued deals too."""
    import threading

    released, armed = threading.Event(), threading.Event()
    decisions: list[int] = []
    _hold_agents(monkeypatch, "pimc:1", armed, released, lambda: decisions.append(1))
    safety = threading.Timer(30, released.set)
    safety.start()
    out: list[tuple[int, str]] = []

    def deal():   # seat 3 of 4, seed 6: P0 plays first, then P1 (two agents before you)
        r = client.post("/api/games", json={"rules": "basic", "num_players": 4, "seat": 3,
                                            "seed": 6, "opponents": ["pimc:1"] * 3})
        out.append((r.status_code, r.json().get("error", "")))
    try:
        with TestClient(create_app()) as client:
            armed.set()
            deals = [threading.Thread(target=deal) for _ in range(2)]
            for t in deals:   # one client's searching deals: the second waits for the first
                t.start()
            try:
                deadline = time.monotonic() + 30
                while (len(search_turns) < 2 or not decisions) and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert len(search_turns) == 2 and decisions == [1]
                client.app.state.stopping.set()
            finally:   # the held requests end before the client closes, whatever failed
                released.set()
                for t in deals:
                    t.join(60)
            assert decisions == [1]   # the decision under way, and none after it
            assert [status for status, _ in out] == [503, 503]
            assert all("the server is stopping" in error for _, error in out), out
            refused(client.get("/api/options"), 503, "the server is stopping")
    finally:
        released.set()
        safety.cancel()


def test_ono_web_stops_on_ctrl_c_with_json_answers_and_no_traceback():
    """Two Ctrl-Cs with a request under way (an upload whose body stalls): the server says it
    is stopping, answers that request 503 in JSON and ends, with no traceback: before, the
    second printed uvicorn's tracebacks and the client got a plain-text 500."""
    import signal
    import socket
    import subprocess
    import sys

    run = subprocess.Popen([sys.executable, "-m", "ono_env.apps.web.server", "--port", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None and run.stderr is not None
        port = int(run.stdout.readline().split("http://127.0.0.1:")[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"POST /api/replays HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      b"application/json\r\nContent-Length: 1000\r\n\r\n{")
            time.sleep(0.3)   # the request is under way (else it is answered 503 all the same)
            run.send_signal(signal.SIGINT)
            time.sleep(0.3)
            run.send_signal(signal.SIGINT)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert run.wait(timeout=60) == 0
        err = run.stderr.read()
    finally:
        run.kill()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503") and b"application/json" in head, answer
    assert "the server is stopping" in json.loads(body)["error"]
    assert err.startswith("ono-web: stopping") and "Traceback" not in err, err


def test_searches_tells_a_search_agents_label_from_others():
    from ono_env.apps.web.server import searches

    for labels in (["pimc:128"], ["you", "oracle (cheating)"], ["oracle-hands:128 (cheating)"],
                   ["greedy", "pimc:1000ms"]):
        assert searches(labels), labels
    for labels in (["greedy", "ppo-any"], ["pimc v2"], ["pimcx:8"], [5]):
        assert not searches(labels), labels


def _replay_files(folder, count, seed=0):
    folder.mkdir(parents=True, exist_ok=True)
    result = run_arena(["greedy", "random"], "basic", num_players=2, num_games=2 * count,
                       seed=seed, rating=False, record=count)
    for k, r in enumerate(result.replays[:count]):
        r.save(folder / f"replay-{k}.json")
    return result.replays


def test_a_clients_uploads_push_out_its_own_before_anothers():
    """Before: a kind's oldest replay went first, whoever sent it, so one client's uploads
    (or saved games) pushed out every other client's."""
    from ono_env.apps.web.server import Replays
    games = run_arena(["greedy", "random"], "basic", num_players=2, num_games=16, seed=5,
                      rating=False, record=8).replays
    for kind in ("upload", "saved"):
        kept = Replays(limit=3)
        mine = kept.add(games[0], "mine", kind, client="10.0.0.1")
        theirs = [kept.add(g, "theirs", kind, client="10.0.0.2") for g in games[1:6]]
        assert kept.has(mine) and [kept.has(r) for r in theirs] == [False] * 3 + [True] * 2
        # the new replay counted: two each, and of those the oldest goes, the first client's
        mine2 = kept.add(games[6], "mine again", kind, client="10.0.0.1")
        assert [kept.has(r) for r in (mine, *theirs[3:], mine2)] == [False, True, True, True]
        kept.add(games[7], "theirs again", kind, client="10.0.0.2")   # 3 against 1: theirs
        assert [kept.has(r) for r in (*theirs[3:], mine2)] == [False, True, True]
    one = Replays(limit=2)   # one client alone: the oldest first, as before
    ids = [one.add(g, "x", "upload", client="10.0.0.1") for g in games[:4]]
    assert [one.has(r) for r in ids] == [False, False, True, True]
    # over the bytes, the client that holds the most bytes gives way, however few its
    # replays: three small ones of one client, then a large one of another's, twice
    sizes = [len(g.to_json().encode()) for g in games]
    small = sorted(range(8), key=sizes.__getitem__)[:3]
    big = [k for k in sorted(range(8), key=sizes.__getitem__, reverse=True) if k not in small]
    by_bytes = Replays(limit=100, max_bytes=sum(sizes[k] for k in small + big[:2]) - 1)
    theirs = [by_bytes.add(games[k], "small", "upload", client="10.0.0.2") for k in small]
    mine = [by_bytes.add(games[k], "big", "upload", client="10.0.0.1") for k in big[:2]]
    assert all(by_bytes.has(r) for r in theirs) and [by_bytes.has(r) for r in mine] == [False, True]


def test_uploads_and_saved_games_never_push_out_the_operators_replay_folders(tmp_path):
    import io
    _replay_files(tmp_path / "rec", 2)
    _replay_files(tmp_path / "more", 1, seed=3)
    uploads = run_arena(["greedy", "random"], "basic", num_players=2, num_games=4, seed=7,
                        rating=False, record=4).replays
    log = io.StringIO()
    client = TestClient(create_app(replay_dirs=[str(tmp_path / "rec"), str(tmp_path / "more")],
                                   max_replays=2, log=log))
    # the folders' two places are full: the second folder's file is not listed, said once
    assert "fill the 2 places kept for them" in log.getvalue()
    assert str(tmp_path / "more" / "replay-0.json") in log.getvalue()
    for r in uploads:   # four uploads into their own two places: each pushes out the oldest
        assert client.post("/api/replays", headers=JSON, content=r.to_json()).status_code == 200
    listed = client.get("/api/replays").json()
    assert [x["title"] for x in listed] == ["upload 4", "upload 3", "rec/replay-1.json",
                                            "rec/replay-0.json"]
    assert [x["decisions"] for x in listed[:2]] == [len(uploads[3].actions), len(uploads[2].actions)]
    # a game saved at the table takes a place of its own kind too (before: refused, and lost,
    # where the folders filled the room; then it pushed out an upload, as an upload pushed
    # out a saved game)
    view = play_out(client, new_game(client, seed=1))
    saved = client.post(f"/api/games/{view['id']}/replay")
    assert saved.status_code == 200
    titles = [x["title"] for x in client.get("/api/replays").json()]
    assert titles == [saved.json()["title"], "upload 4", "upload 3", "rec/replay-1.json",
                      "rec/replay-0.json"]


def test_a_replay_file_too_long_to_show_is_skipped_before_it_is_replayed(tmp_path, monkeypatch):
    import io

    import ono_env.apps.web.server as server
    good = _replay_files(tmp_path, 1)[0]
    d = good.to_dict()
    n = server.MAX_REPLAY_DECISIONS + 1
    d["actions"], d["thinking"], d["max_decisions"] = ["draw"] * n, [None] * n, n
    d["result"]["decisions"] = n
    (tmp_path / "long.json").write_text(json.dumps(d))
    replayed = []
    real = server.replay_positions
    monkeypatch.setattr(server, "replay_positions", lambda r: replayed.append(r) or real(r))
    log = io.StringIO()
    client = TestClient(create_app(replay_dirs=[str(tmp_path)], log=log))
    assert [x["title"] for x in client.get("/api/replays").json()] == ["replay-0.json"]
    assert "long.json skipped" in log.getvalue()
    assert f"at most {server.MAX_REPLAY_DECISIONS}" in log.getvalue()
    assert [len(r.actions) for r in replayed] == [len(good.actions)]


def test_a_replay_is_replayed_for_the_viewer_once_then_served_as_kept(tmp_path, monkeypatch):
    import ono_env.apps.web.server as server
    r = _replay_files(tmp_path, 1)[0]
    client = TestClient(create_app(replay_dirs=[str(tmp_path)]))
    rid = client.get("/api/replays").json()[0]["id"]
    calls = []
    real = server.replay_positions
    monkeypatch.setattr(server, "replay_positions", lambda x: calls.append(1) or real(x))
    first = client.get(f"/api/replays/{rid}")
    second = client.get(f"/api/replays/{rid}")
    assert first.status_code == second.status_code == 200
    assert first.headers["content-type"] == "application/json"
    assert first.content == second.content and len(calls) == 1
    assert first.json() == json.loads(json.dumps(server.replay_view(r)))
    assert len(calls) == 2   # replay_view itself replays; the route did not, the second time
    refused(client.get("/api/replays/0000"), 404, "no replay")


def test_a_replays_view_is_encoded_an_item_at_a_time(monkeypatch):
    """The view's JSON is one ``json.dumps``'s text, made a position and a decision at a time:
    before, one ``json.dumps`` of a 20,000-decision view at 10 players held Python's lock for
    0.6 to 0.8 s, in which the event loop answered no client."""
    from ono_env.apps.web import server

    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=2, seed=0,
                  rating=False, record=1).replays[0]
    view = server.replay_view(r)
    whole = json.dumps(view, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    replays = server.Replays()
    rid = replays.add(r, "a game")
    encoded: list[object] = []
    dumps = json.dumps
    monkeypatch.setattr(json, "dumps", lambda x, **kw: encoded.append(x) or dumps(x, **kw))
    assert replays.view(rid) == whole.encode("utf-8")
    steps = len(view["steps"])
    assert not any((isinstance(x, dict) and "steps" in x)
                   or (isinstance(x, list) and len(x) == steps) for x in encoded)


def test_the_kept_views_stay_within_their_byte_cap(tmp_path, monkeypatch):
    import ono_env.apps.web.server as server
    a, b = _replay_files(tmp_path, 2)
    size = max(len(json.dumps(server.replay_view(r), ensure_ascii=False,
                              separators=(",", ":")).encode()) for r in (a, b))
    kept = server.Replays(max_view_bytes=size + 1)   # room for one view, not two
    ids = [kept.add(a, "a"), kept.add(b, "b")]
    calls = []
    real = server.replay_view
    monkeypatch.setattr(server, "replay_view", lambda r: calls.append(r) or real(r))
    kept.view(ids[0])
    kept.view(ids[0])
    assert len(calls) == 1
    kept.view(ids[1])   # pushes the first view out
    kept.view(ids[0])
    assert len(calls) == 3 and kept._view_bytes <= size + 1


def test_a_saved_game_longer_than_the_viewer_shows_is_still_kept_for_download():
    # before: Replays.add refused over 20,000 decisions for every caller, so a long match
    # saved at the table (up to 50,000 decisions) was refused and lost
    import ono_env.apps.web.server as server
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=10, seed=0,
                  rating=False, record=1).replays[0]
    d = r.to_dict()
    n = server.MAX_REPLAY_DECISIONS + 1
    d["actions"], d["thinking"], d["max_decisions"] = ["draw"] * n, [None] * n, n
    d["result"]["decisions"] = n
    long = Replay.from_json(json.dumps(d), "long")
    kept = server.Replays()
    rid = kept.add(long, "web game 1")
    assert len(kept.get(rid).actions) == n
    with pytest.raises(server.Refused, match=f"the viewer shows at most {server.MAX_REPLAY_DECISIONS}"):
        kept.view(rid)


def test_the_can_be_caught_mark_and_a_penalty_matchs_winners_follow_the_engine():
    # before: the mark stayed on a seat that had got cards since (a Wild Shuffle Hands) and
    # invited a false accusation; a penalty-scored match named the last round's winner
    import numpy as np

    from ono_env.agents.registry import agent_names
    from ono_env.apps.web.table import Table, default_agent_factory, make_rules
    from ono_env.positions import game_winners

    allowed = {a: a for a in agent_names()}
    rules = make_rules("uno2018", {"wild_shuffle_hands_cards": 30, "false_catch_penalty": 4,
                                   "hand_size": 3}, 3)
    marked = unmarked = 0
    for seed in (21, 38):   # a seat marked; a seat that played down to one card, then got more
        rng = np.random.default_rng(seed)
        t = Table("x", rules, 0, ["random", "random"], seed, default_agent_factory(rules, allowed))
        while not t.game.finished[0]:
            v = t.view()
            d = t.position
            for p in v["players"]:   # marked exactly where a catch succeeds
                assert p["catchable"] == (d["exposed"] == p["seat"] == d["previous_player"]
                                          and p["cards"] == 1)
                marked += p["catchable"]
                unmarked += d["exposed"] == p["seat"] and not p["catchable"]
            names = [a["name"] for a in v["legal"] if a["name"] != "call"] or [
                a["name"] for a in v["legal"]]
            t.act("play WS" if "play WS" in names else names[int(rng.integers(len(names)))],
                  v["move"])
    assert marked > 0 and unmarked > 0
    rules = make_rules("stacking", {"target_score": 150}, 3)
    differ = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        t = Table("y", rules, 0, ["greedy", "greedy"], seed, default_agent_factory(rules, allowed))
        while not t.game.finished[0]:
            v = t.view()
            t.act(v["legal"][int(rng.integers(len(v["legal"])))]["name"], v["move"])
        result, d = t.view()["result"], t.position
        low = min(d["scores"])
        assert result["winners"] == game_winners(d) == [q for q in range(3) if d["scores"][q] == low]
        differ += result["winners"] != [d["winner"]]
    assert differ > 0


def test_the_deal_and_a_replays_round_ends_are_said(client):
    # before: the first card's effect, and a round's end in the replay viewer, had no line
    view = new_game(client, rules="classic", options={"target_score": 300}, seed=5)
    assert view["deal"][0].startswith(("P1 deals; the first card is ", "you deal; the first card is "))
    end = play_out(client, view)
    saved = client.post(f"/api/games/{end['id']}/replay").json()
    rv = client.get(f"/api/replays/{saved['id']}").json()
    assert rv["deal"] and rv["deal"][0].endswith(view["deal"][0].split("; ", 1)[1])
    ends = [d for d in rv["decisions"] if d["round_end"]]
    assert len(ends) == end["round"] >= 2
    for d in ends[:-1]:   # a round won, then the next deal's first card
        assert any(e.startswith("round ") and " won by P" in e for e in d["events"])
        assert any(" deals; the first card is " in e for e in d["events"])
    assert not any(" deals; " in e for e in ends[-1]["events"])


def test_the_setup_marks_the_cheating_agents_and_a_zero_budget_is_named(client):
    options = client.get("/api/options").json()
    assert set(options["cheating"]) == {"oracle-hands", "oracle"} <= set(options["agents"])
    r = client.post("/api/games", json={"rules": "basic", "num_players": 2, "opponents": ["pimc:0"]})
    assert r.status_code == 400 and "the budget must be above 0" in r.json()["error"]


def test_replay_uploads_leave_the_workers_to_the_games(monkeypatch):
    """Uploads are read and checked in the replays' own thread: six long checks at once
    (held here at their replaying) leave a new game to be dealt at once (before: they took
    all four of the agents' workers, and the new game waited), and a replay's view built
    before is answered at once too."""
    import threading

    from ono_env.apps.web import server

    entered, released, armed = threading.Event(), threading.Event(), threading.Event()
    check = server.replay_positions

    def held(replay, **kw):
        if armed.is_set():
            entered.set()
            assert released.wait(30)
        return check(replay, **kw)
    monkeypatch.setattr(server, "replay_positions", held)
    monkeypatch.setattr(server, "UPLOADS_PER_CLIENT", 6)   # the test client's six at once
    safety = threading.Timer(30, released.set)
    safety.start()
    texts = [r.to_json() for r in run_arena(["greedy", "random"], "basic", num_players=2,
                                            num_games=8, seed=0, rating=False, record=7).replays]
    try:
        with TestClient(create_app()) as client:
            first = client.post("/api/replays", headers=JSON, content=texts[0]).json()["id"]
            built = client.get(f"/api/replays/{first}").content   # its view, kept
            armed.set()
            out: list[int] = []
            uploads = [threading.Thread(target=lambda t=t: out.append(client.post(
                "/api/replays", headers=JSON, content=t).status_code)) for t in texts[1:]]
            for t in uploads:
                t.start()
            assert entered.wait(30)
            view = new_game(client, opponents=["greedy"])
            # a view built before is answered without waiting for the replays' thread
            assert client.get(f"/api/replays/{first}").content == built
            dealt_at_once = not released.is_set()
            released.set()
            for t in uploads:
                t.join(60)
            assert dealt_at_once and not view["finished"]
            assert out == [200] * 6
    finally:
        released.set()
        safety.cancel()


def test_an_unknown_query_parameter_is_refused_by_every_endpoint(client):
    """Before: ignored, and ``/api/replays?limit=5`` answered with every replay."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    game = new_game(client)["id"]
    for method, path in [("GET", "/api/replays?limit=5"), ("GET", "/api/options?x=1"),
                         ("GET", f"/api/games/{game}?seat=1"), ("POST", "/api/games?seat=1"),
                         ("GET", "/api/replays/nothere?limit=5&limit=6")]:
        refused(client.request(method, path, json={}), 400, "unknown query parameter '",
                "allowed: none (this endpoint takes no query parameters)")
    assert client.get("/api/options").status_code == 200
    assert client.get("/?from=bookmark").status_code == 200   # the page and its assets: any
    assert client.get("/static/app.js?v=2").status_code == 200
    mounted = TestClient(Starlette(routes=[Mount("/ono", app=create_app())]))
    refused(mounted.get("/ono/api/options?x=1"), 400, "unknown query parameter 'x'")


def test_a_range_header_is_ignored_and_every_file_is_sent_whole(client):
    """Before: Starlette's file answers took a range, and answered a bad or unsatisfiable
    one in plain text (400, 416), where every error the server sends is JSON."""
    whole = client.get("/static/app.js")
    page = client.get("/")
    assert whole.status_code == 200 and page.status_code == 200
    for rng in ("bytes=999999-", "bytes=abc", "bytes=0-9", "bytes=5-1,0-3"):
        for path, sent in (("/static/app.js", whole), ("/", page)):
            r = client.get(path, headers={"Range": rng})
            assert r.status_code == 200 and r.content == sent.content, (path, rng)
            assert "content-range" not in r.headers and "accept-ranges" not in r.headers


def test_errors_cut_what_they_echo(client):
    """Before: the value was echoed whole (4,000 digits, a 50,000-character string, every
    unknown option name), so one error could be as long as the request."""
    base = {"rules": "basic", "num_players": 2, "opponents": ["greedy"]}
    for body, fragment in [({**base, "seed": 10**4000}, "seed=<an integer of 4,001 digits>"),
                           ({**base, "seat": "x" * 50_000}, "seat='xxxx"),
                           ({**base, "thinking": "y" * 50_000}, "thinking='yyyy"),
                           ({**base, "options": {f"k{i}" * 3_000: 1 for i in range(8)}},
                            "and 3 more: options are")]:
        error = refused(client.post("/api/games", json=body), 400, fragment)
        assert len(error) < 1_000, len(error)
    view = new_game(client)
    error = refused(client.post(f"/api/games/{view['id']}/action",
                                json={"action": 10**4000, "move": view["move"]}), 400,
                    "action <an integer of 4,001 digits> is out of range")
    assert len(error) < 1_000, len(error)


def _held_uploads(monkeypatch, record: int):
    """``record`` replays to upload; clients of one app, by address (``client(host)``), whose
    upload checks add each replay's seed to ``order`` and then wait for ``release``;
    ``two_held(c)``: client ``c``'s uploads of the first two replays, started at once, once the
    first is held at its check."""
    import asyncio
    import threading

    import httpx

    from ono_env.apps.web import server

    order: list[int] = []
    release = threading.Event()
    check = server.replay_positions

    def held(replay, **kw):
        order.append(replay.game_seed)
        assert release.wait(30)
        return check(replay, **kw)
    monkeypatch.setattr(server, "replay_positions", held)
    rs = run_arena(["greedy", "random"], "basic", num_players=2, num_games=8, seed=0,
                   rating=False, record=record).replays
    app = create_app()

    def client(host):
        return httpx.AsyncClient(transport=httpx.ASGITransport(app, client=(host, 1)),
                                 base_url="http://127.0.0.1")

    def post(c, r):
        return c.post("/api/replays", headers=JSON, content=r.to_json())

    async def two_held(c):
        mine = [asyncio.create_task(post(c, r)) for r in rs[:2]]
        while not order:
            await asyncio.sleep(0.01)
        return mine
    return rs, order, release, client, post, two_held


def test_one_clients_uploads_are_checked_one_at_a_time(monkeypatch):
    """Two uploads of one client sent at once wait on each other, not on the replays'
    worker: another client's upload is checked after at most one of them (before: after
    both, seconds each for a long replay)."""
    import asyncio

    rs, order, release, client, post, two_held = _held_uploads(monkeypatch, 4)

    async def main():
        async with client("10.0.0.1") as a, client("10.0.0.2") as b:
            mine = await two_held(a)
            other = asyncio.create_task(post(b, rs[3]))
            await asyncio.sleep(0.2)   # each queued where it waits
            release.set()
            return [r.status_code for r in await asyncio.gather(*mine, other)]
    try:
        assert asyncio.run(main()) == [200] * 3
    finally:
        release.set()
    assert order[1] == rs[3].game_seed and len(order) == 3


def test_a_clients_third_upload_at_once_is_429(monkeypatch):
    """A client with two uploads at the server (one checked, one waiting) is answered 429 for a
    third, which changes nothing, while another client's upload is taken; once its uploads
    are answered it may send more (before: every upload waited, its body held within
    MAX_BODIES, so that one client's sixteen uploads filled it for everyone)."""
    import asyncio

    rs, _order, release, client, post, two_held = _held_uploads(monkeypatch, 5)

    async def main():
        async with client("10.0.0.1") as a, client("10.0.0.2") as b:
            mine = await two_held(a)
            await asyncio.sleep(0.1)   # the second waits its turn
            third = await post(a, rs[2])
            listed = (await a.get("/api/replays")).json()
            other = asyncio.create_task(post(b, rs[3]))
            await asyncio.sleep(0.1)
            release.set()
            done = [r.status_code for r in await asyncio.gather(*mine, other)]
            again = await post(a, rs[4])
            return third, listed, done, again, (await a.get("/api/replays")).json()
    try:
        third, listed, done, again, after = asyncio.run(main())
    finally:
        release.set()
    assert third.status_code == 429 and third.headers["retry-after"] == "5"
    assert "2 replay uploads at the server already" in third.json()["error"]
    assert listed == [] and done == [200] * 3 and again.status_code == 200
    assert len({r["id"] for r in after}) == 4   # the third alone not kept


def test_uploads_to_an_app_mounted_under_a_prefix(monkeypatch):
    """Before: an upload to an app mounted at /ono was a 500 (the upload gate's entry was made
    only for the path /api/replays), and its body had the 64 KiB limit of the other requests."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    text = run_arena(["greedy", "random"], "basic", num_players=2, num_games=2, seed=0,
                     rating=False, record=1).replays[0].to_json()
    with TestClient(Starlette(routes=[Mount("/ono", app=create_app())])) as client:
        assert client.post("/ono/api/replays", headers=JSON, content=text).status_code == 200
        big = client.post("/ono/api/replays", headers=JSON, content=" " * (100 << 10) + text)
        assert big.status_code == 200, big.text
        assert len(client.get("/ono/api/replays").json()) == 1   # the same replay again


def _asgi_get(app, path, client="10.0.0.1", gone_after=None, hold=None):
    """GET ``path`` by the ASGI calls themselves (no test client: each message the server
    sends is seen), from client address ``client``; ``gone_after``: the client hangs up
    (the send fails) at that body message; ``hold``: an awaitable run before each body
    message is taken (a client that reads slowly). Returns the messages sent."""
    import anyio

    sent, asked = [], [False]

    async def receive():
        if not asked[0]:
            asked[0] = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await anyio.sleep_forever()

    async def send(message):
        if message["type"] == "http.response.body":
            if hold is not None:
                await hold()
            if gone_after is not None and sum(
                    m["type"] == "http.response.body" for m in sent) >= gone_after:
                raise OSError("the client is gone")
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
             "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
             "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1")], "client": (client, 50000),
             "server": ("127.0.0.1", 8000)}
    return scope, receive, send, sent


async def _until(done):
    """Wait until ``done()``, at most 30 s (then a failure, not a hung suite)."""
    import anyio

    with anyio.fail_after(30):
        while not done():
            await anyio.sleep(0.01)


async def _unread_get(app, path, release, results):
    """GET ``path`` from a client that reads no part of the answer until ``release`` is set;
    the status is appended to ``results``."""
    scope, receive, send, sent = _asgi_get(app, path, hold=release.wait)
    await app(scope, receive, send)
    results.append(sent[0]["status"])


def test_replay_views_are_sent_in_chunks_and_counted_per_client(tmp_path):
    """Before: a view was handed to the connection whole (35 MB for a 20,000-decision replay
    at 10 players), copied into the send buffer of every client that did not read it, and
    one client's views, built one after another in the replays' worker, held every other
    client's views and uploads behind them."""
    import anyio

    from ono_env.apps.web import server

    folder = tmp_path / "replays"
    folder.mkdir()
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=4, seed=1,
                  rating=False, record=1).replays[0]
    r.save(folder / "a.json")
    import io

    app = create_app(replay_dirs=[str(folder)], log=io.StringIO())
    rid = app.state.replays.listing()[0]["id"]
    whole = app.state.replays.view(rid)

    async def main():
        small = server.SEND_CHUNK
        try:
            server.SEND_CHUNK = 256   # many chunks of a small replay
            for path, body in ((f"/api/replays/{rid}", whole),
                               (f"/api/replays/{rid}/file",
                                (app.state.replays.text(rid) + "\n").encode())):
                scope, receive, send, sent = _asgi_get(app, path)
                await app(scope, receive, send)
                parts = [m["body"] for m in sent if m["type"] == "http.response.body"]
                assert sent[0]["status"] == 200 and len(parts) > 2
                assert max(map(len, parts)) <= 256 and b"".join(parts) == body
                length = dict(sent[0]["headers"])[b"content-length"]
                assert int(length) == len(body)
                assert app.state.reads.held("10.0.0.1") == 0
            # a client that hangs up mid-answer is counted no more
            scope, receive, send, sent = _asgi_get(app, f"/api/replays/{rid}", gone_after=2)
            with pytest.raises(OSError, match="the client is gone"):
                await app(scope, receive, send)
            assert app.state.reads.held("10.0.0.1") == 0
            # a client that does not read holds READS_PER_CLIENT answers, no more; another
            # client is answered meanwhile
            release = anyio.Event()
            results = []
            async with anyio.create_task_group() as tg:
                for _ in range(server.READS_PER_CLIENT):
                    tg.start_soon(_unread_get, app, f"/api/replays/{rid}", release, results)
                await _until(lambda: app.state.reads.held("10.0.0.1") >= server.READS_PER_CLIENT)
                scope, receive, send, sent = _asgi_get(app, f"/api/replays/{rid}")
                await app(scope, receive, send)
                assert sent[0]["status"] == 429
                assert b"fetching 2 replays" in sent[1]["body"]
                scope, receive, send, sent = _asgi_get(app, f"/api/replays/{rid}",
                                                       client="10.0.0.2")
                await app(scope, receive, send)
                assert sent[0]["status"] == 200
                release.set()
            assert results == [200] * server.READS_PER_CLIENT
            assert app.state.reads.held("10.0.0.1") == 0
        finally:
            server.SEND_CHUNK = small
    anyio.run(main)


def test_a_replay_file_is_counted_before_it_is_unpacked(tmp_path):
    """Before: every request for a replay file was unpacked and encoded (megabytes for a long
    replay) in a thread of its own and counted only then, so a hundred requests of one
    client held 445 MB and twenty unpacking threads before all but two were answered 429."""
    import io

    import anyio

    from ono_env.apps.web import server

    folder = tmp_path / "replays"
    folder.mkdir()
    run_arena(["greedy", "random"], "basic", num_players=2, num_games=2, seed=1,
              rating=False, record=1).replays[0].save(folder / "a.json")
    app = create_app(replay_dirs=[str(folder)], log=io.StringIO())
    replays = app.state.replays
    rid = replays.listing()[0]["id"]
    unpacked = []
    text = replays.text
    replays.text = lambda r: unpacked.append(r) or text(r)

    async def main():
        release = anyio.Event()
        results = []
        async with anyio.create_task_group() as tg:
            for _ in range(server.READS_PER_CLIENT):
                tg.start_soon(_unread_get, app, f"/api/replays/{rid}/file", release, results)
            await _until(lambda: len(unpacked) >= server.READS_PER_CLIENT)
            scope, receive, send, sent = _asgi_get(app, f"/api/replays/{rid}/file")
            await app(scope, receive, send)
            assert sent[0]["status"] == 429
            assert len(unpacked) == server.READS_PER_CLIENT   # the refused one unpacked nothing
            release.set()
        assert results == [200] * server.READS_PER_CLIENT
        assert app.state.reads.held("10.0.0.1") == 0
    anyio.run(main)
