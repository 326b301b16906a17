"""The web table end to end in a real browser: headless Chromium (Debian's ``chromium``
package, which ``.ci/run`` installs) driven by Playwright. ``ono-web`` runs as a separate
process on a free local port; the test plays a whole ``basic`` game against ``greedy`` by
clicking, checks the final screen, takes screenshots, saves the replay and steps through it,
and opens an arena replay from the list.

Without Chromium the tests are skipped, unless ``ONO_REQUIRE_BROWSER=1`` (set by ``.ci/run``),
which makes a missing browser a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("fastapi")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    if os.environ.get("ONO_REQUIRE_BROWSER") == "1":
        raise RuntimeError("ONO_REQUIRE_BROWSER=1 but no chromium on PATH: "
                           "apt-get install chromium")
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

from ono_env.arena import run_arena  # noqa: E402
from ono_env.positions import game_winners  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replays")
    result = run_arena(["greedy", "ppo-basic-2p"], "basic", num_players=2, num_games=10, seed=2,
                       rating=False, record=1)
    result.replays[0].save(folder / "arena-game.json")
    ono = run_arena(["random", "greedy"], "ono", num_players=2, num_games=10, seed=4,
                    rating=False, record=1)
    ono.replays[0].save(folder / "ono-game.json")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.apps.web.server", "--port", "0",
                             "--replays", str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    line = proc.stdout.readline()
    m = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
    if m is None:
        proc.kill()
        raise RuntimeError(f"ono-web did not start: {line}{proc.stdout.read()}")
    yield m.group(1), result.replays[0], ono.replays[0]
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def page():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900},
                                      user_agent="ono-env-test")
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.errors = errors
        yield pg
        browser.close()


def _decide(page) -> None:
    """One decision by clicking: the first playable card (and a wild's first colour), else the
    first button (draw, keep, ...); then wait for the next view."""
    move = page.get_attribute("body", "data-move")
    playable = page.locator("#hand .card.playable")
    if playable.count():
        playable.first.click()
        choice = page.locator("#chooser:not([hidden]) button")
        if choice.count():      # a wild: its colours
            choice.first.click()
    else:
        page.locator("#buttons button").first.click()
    page.wait_for_function(f"document.body.dataset.move !== '{move}' || "
                           f"document.body.dataset.finished === 'true'")


def _open_replay(page, url: str, name: str) -> None:
    page.goto(url + "#/replays")
    page.wait_for_selector("#replay-list a")
    page.click(f"text={name}")
    page.wait_for_selector("#screen-replay:not([hidden])")


def test_play_a_whole_basic_game_against_greedy_by_clicking(server, page, tmp_path):
    url = server[0]
    page.goto(url)
    page.wait_for_selector("#f-opponents select")
    assert page.input_value("#f-rules") == "basic" and page.input_value("#f-players") == "2"
    page.select_option("#f-opponents select", "greedy")
    page.fill("#f-seed", "5")
    page.click("#start")
    page.wait_for_selector("#screen-game:not([hidden])")
    assert "basic rules" in page.inner_text("#status")
    assert page.locator("#hand .card").count() in (7, 8)
    page.screenshot(path=str(tmp_path / "table.png"))
    clicks = 0
    while page.get_attribute("body", "data-finished") != "true":
        _decide(page)
        clicks += 1
        assert clicks < 500
    result = page.inner_text("#result")
    assert result in ("You win!", "P1 (greedy) wins")
    hand = page.locator("#hand .card").count()
    opponent = page.inner_text("[data-seat='1']")
    assert (hand == 0) == (result == "You win!") and ("0 cards" in opponent) == (result != "You win!")
    assert page.locator("#buttons button").count() == 0 and page.errors == []
    # the end screen shows every hand: the loser's cards, the winner's none
    finals = page.locator("#final-hands .final-hand")
    assert finals.count() == 2
    loser = 1 if result == "You win!" else 0
    assert finals.nth(loser).locator(".card").count() > 0
    assert "no cards" in finals.nth(1 - loser).inner_text()
    page.screenshot(path=str(tmp_path / "end.png"))
    assert (tmp_path / "end.png").read_bytes()[:4] == b"\x89PNG"
    # save the game as a replay and step through it
    page.click("#save-replay")
    page.wait_for_selector("#open-replay:not([hidden])")
    page.click("#open-replay")
    page.wait_for_selector("#screen-replay:not([hidden])")
    total = int(page.inner_text("#rp-step").split(" of ")[1])
    assert total >= clicks
    assert page.inner_text("#rp-step") == f"decision 0 of {total}"
    assert page.is_disabled("#rp-back")
    page.click("#rp-mine")                      # your next decision
    assert page.inner_text("#rp-decision").startswith("P0: ")
    assert int(page.inner_text("#rp-step").split()[1]) > 0
    page.click("#rp-first")
    hands = page.locator("#rp-hands .player")
    assert hands.count() == 2 and all(hands.nth(q).locator(".card").count() == 7 for q in range(2))
    page.click("#rp-next")
    page.click("#rp-next")
    page.click("#rp-back")
    assert page.inner_text("#rp-step") == f"decision 1 of {total}"
    page.click("#rp-last")
    assert page.inner_text("#rp-result") == result.replace("You win!", "P0 (you) wins")
    assert page.is_disabled("#rp-next")
    page.screenshot(path=str(tmp_path / "replay.png"))
    assert page.errors == []


def test_open_an_arena_replay_from_the_list_and_see_what_the_policy_thought(server, page):
    url, replay = server[:2]
    _open_replay(page, url, "arena-game.json")
    n = len(replay.actions)
    assert page.inner_text("#rp-step") == f"decision 0 of {n}"
    seat = replay.players.index("ppo-basic-2p")
    k = next(i for i, t in enumerate(replay.thinking) if t is not None)
    for _ in range(k):
        page.keyboard.press("ArrowRight")
    assert page.inner_text("#rp-step") == f"decision {k} of {n}"
    assert f"P{seat}:" in page.inner_text("#rp-decision")
    assert "value estimate" in page.inner_text("#rp-thinking")
    page.click("#rp-last")
    (w,) = game_winners(replay.result, replay.rules)
    assert page.inner_text("#rp-result") == f"P{w} ({replay.players[w]}) wins"
    assert page.errors == []


def test_a_refused_setup_shows_the_reason(server, page):
    url = server[0]
    page.goto(url + "#/new")
    page.wait_for_selector("#f-opponents select option[value='ppo-basic-2p']", state="attached")
    # a policy trained for basic 2 players is offered only at such a table
    page.select_option("#f-rules", "classic")
    page.fill("#f-players", "2")
    page.dispatch_event("#f-players", "change")
    page.wait_for_function("() => ![...document.querySelectorAll('#f-opponents select option')]"
                           ".some(o => o.value === 'ppo-basic-2p')")
    page.eval_on_selector("[data-option=hand_size]", "e => { e.value = '0'; }")   # refused
    page.click("#start")
    page.wait_for_selector("#error:not([hidden])")
    assert "hand_size" in page.inner_text("#error")
    # a seed past 2**53 - 1 would reach the server as another number: refused in the page
    page.eval_on_selector("[data-option=hand_size]", "e => { e.value = '7'; }")
    # and an emptied seat field is said so (before: sent as seat 0, as Number("") is 0)
    for seed, seat, word, message in (
            ("9007199254740993", "0", "seed", "allowed: a whole number from 0 to 9007199254740991"),
            ("", "", "seat", "Your seat: empty; allowed: a whole number")):
        page.fill("#f-seed", seed)
        page.fill("#f-seat", seat)
        page.click("#start")
        page.wait_for_function(f"() => document.querySelector('#error').innerText"
                               f".includes('{word}')")
        assert message in page.inner_text("#error")
        assert page.locator("#screen-game:not([hidden])").count() == 0
    page.fill("#f-seed", "")   # the page is shared with the next tests
    page.fill("#f-seat", "0")


def test_the_new_game_form_explains_the_options_and_takes_a_typed_agent(server, page):
    url = server[0]
    page.goto(url + "#/new")
    page.wait_for_selector("[data-help=ono_penalty]", state="attached")
    assert "the last-card call" in page.text_content("[data-help=ono_penalty]")
    page.select_option("#f-rules", "ono")
    assert "a caught player swaps hands" in page.inner_text("#f-preset-help")
    assert "allowed: none, draw, swap_hands" in page.text_content("[data-help=ono_penalty]")
    page.select_option("#f-rules", "basic")
    page.fill("#f-players", "2")
    page.dispatch_event("#f-players", "change")
    # the one opponent of two players (before: the earlier form's first of three could be
    # filled as the form was redrawn, and the game asked for three opponents)
    page.wait_for_function("() => document.querySelectorAll('[data-opponent-text]').length === 1")
    page.fill("[data-opponent-text='0']", "pimc:99999")     # past the server's limit: refused
    page.click("#start")
    page.wait_for_selector("#error:not([hidden])")
    assert "budget is past this server's limit" in page.inner_text("#error")
    page.fill("[data-opponent-text='0']", "pimc:8")
    page.fill("#f-seed", "3")
    page.click("#start")
    page.wait_for_selector("#screen-game:not([hidden])")
    assert "pimc:8" in page.inner_text(".seat[data-seat='1'] .name")
    assert page.errors == []


def _centre(page, selector):
    box = page.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_seats_around_the_table_and_a_false_catch_is_announced(server, page):
    url = server[0]
    page.goto(url + "#/new")
    page.wait_for_selector("#f-opponents select")
    page.select_option("#f-rules", "ono")
    page.fill("#f-players", "4")
    page.dispatch_event("#f-players", "change")
    page.wait_for_selector("[data-opponent='2']")
    page.fill("#f-seed", "4")
    page.click("#start")
    page.wait_for_selector("#screen-game:not([hidden])")
    # you at the bottom; P1 on your left, P2 across, P3 on your right (clockwise)
    (x0, y0), (x1, y1), (_x2, y2), (x3, y3) = (_centre(page, f".seat[data-seat='{q}']")
                                              for q in range(4))
    assert y0 > max(y1, y2, y3) and y2 < min(y0, y1, y3) and x1 < x0 < x3
    assert page.locator(".seat.active").count() == 1
    assert page.get_attribute(".ring-centre", "data-direction") in ("clockwise",
                                                                    "counter-clockwise")
    page.click("#rules-box summary")
    assert "Rules: ono" in page.inner_text("#rules-text")
    for _ in range(30):         # to the first turn where catch is offered
        if page.locator("[data-action=catch]").count():
            break
        _decide(page)
    move = page.get_attribute("body", "data-move")
    before = page.locator("#hand .card").count()
    # the button says what a false accusation costs, as the terminal does (before: "catch")
    assert re.search(r"if P\d holds more than one card you draw 4",
                     page.inner_text("[data-action=catch]"))
    page.click("[data-action=catch]")
    page.wait_for_function(f"document.body.dataset.move !== '{move}'")
    assert "false accusation: you draw 4 cards" in page.inner_text("#history")
    assert page.locator("#hand .card").count() >= before + 4 - 1
    assert page.errors == []


def test_a_replay_shows_the_direction_and_jumps_to_key_events(server, page):
    url = server[0]
    _open_replay(page, url, "ono-game.json")
    assert "clockwise" in page.inner_text("#rp-direction")
    assert page.is_hidden("#rp-mine")            # no seat of this replay is "you"
    from ono_env.cards import action_name
    from ono_env.replay import replay_positions

    replay = server[2]
    positions = replay_positions(replay)
    key = [k for k, a in enumerate(replay.actions)
           if re.match(r"catch|challenge|play WS|target", action_name(a))
           or positions[k + 1]["round"] != positions[k]["round"] or positions[k + 1]["terminated"]]
    assert len(key) >= 2
    for k in key[:2]:          # each click lands just after the next key decision
        page.click("#rp-key")
        assert page.inner_text("#rp-step").split()[1] == str(k + 1)
        assert action_name(replay.actions[k]) in page.inner_text("#rp-previous")
    assert page.errors == []


def test_a_bad_game_link_shows_the_error_alone_and_a_lost_round_end_is_shown(server, page):
    """Before: ``#/game/<bad id>`` showed the error above the previous game's table, still
    clickable; and a round's end that the log (the last 40 decisions) no longer held, after
    many agents' decisions between two of the human's, was shown nowhere on the page."""
    import json

    url = server[0]
    page.goto(url + "#/new")
    page.wait_for_selector("#f-opponents select")
    page.select_option("#f-opponents select", "greedy")
    page.fill("#f-seed", "5")
    page.click("#start")
    page.wait_for_selector("#screen-game:not([hidden])")
    game = page.evaluate("location.hash").split("/")[2]
    page.goto(url + "#/game/nosuchgame")
    page.wait_for_selector("#error:not([hidden])")
    assert page.locator("#screen-game:not([hidden])").count() == 0
    assert "nosuchgame" in page.inner_text("#error") or "no game" in page.inner_text("#error")

    # the server's view as it is after a round ended 50 decisions back: the log holds none
    # of that round's entries, the view's events hold its lines
    def older(route):
        view = route.fetch().json()
        view.update(events=["round 1 won by P1 (greedy): 42 points"], events_decision=0,
                    history=[h for h in view["history"] if h["decision"] > 0], deal=[])
        route.fulfill(status=200, content_type="application/json", body=json.dumps(view))
    page.route(f"**/api/games/{game}", older)
    page.goto(url + f"#/game/{game}")
    page.reload()   # the page loads the game afresh (it keeps the table it holds)
    page.wait_for_selector("#screen-game:not([hidden])")
    page.wait_for_selector("#history .earlier")
    text = page.inner_text("#history .earlier")
    assert "earlier: the last round's end" in text and "round 1 won by P1 (greedy)" in text
    page.unroute(f"**/api/games/{game}")
    assert not page.errors
