"""tarot-web in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven
by selenium) plays a whole hand of each game by clicks alone against fast bots, with a refused illegal
click, an undo and a hint, and saves a screenshot of each table.

In CI (``CI`` set, or ``TAROT_REQUIRE_BROWSER`` as ``.ci/run`` sets it) a missing browser fails the test;
elsewhere it is skipped with the reason. ``TAROT_WEB_SCREENSHOT=PATH`` also saves the Ottocento table
there (docs/web_table.png).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

IN_CI = bool(os.environ.get("CI") or os.environ.get("TAROT_REQUIRE_BROWSER"))
ONE_HAND = {"partita": '{"deals_per_game": 1}', "millone": '{"max_hands": 1}',
            "ottocento": '{"max_hands": 1, "first_dealer": 2}'}


def need(ok: bool, why: str) -> None:
    if not ok:
        (pytest.fail if IN_CI else pytest.skip)(why + (" (CI: .ci/run installs it)" if IN_CI else ""))


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
    except ImportError:
        need(False, "selenium is not installed: pip install -e '.[dev]'")
    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    need(bool(chromium and driver), "headless Chromium needs Debian's chromium and chromium-driver: "
                                    "apt-get install -y chromium chromium-driver")
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # selenium never downloads a driver or a browser here
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="tarot-web-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    d = webdriver.Chrome(service=Service(driver), options=opts)
    d.implicitly_wait(0)
    yield d
    d.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("uvicorn")
    from tarot_web.app import create_app
    from tarot_web.bench import serve
    from tarot_web.cli import warm

    warm()  # compile the rules first (a fresh machine: about 30 s), not while the page waits for a move
    with serve(create_app()) as base:
        yield base


def wait_for(d, check, what: str, timeout: float = 60):
    """Wait until ``check()`` holds; on a timeout, fail with ``what`` and the page's status and message."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda _: check())
    except TimeoutException:
        text = [d.find_element("id", k).text for k in ("status", "message")]
        pytest.fail(f"{what}: not seen in {timeout} s; the page says {text}")


def status(d) -> tuple[str, str]:
    el = d.find_element("id", "status")
    return el.get_attribute("data-state"), el.get_attribute("data-step")


def settled(d) -> bool:
    return status(d)[0] in ("your-turn", "over", "error")


def start_game(d, base: str, game: str) -> None:
    from selenium.webdriver.support.ui import Select

    d.get(base + "/")
    wait_for(d, lambda: d.find_elements("css selector", "#game option"), "the page loads the games")
    Select(d.find_element("id", "game")).select_by_value(game)
    for i, sel in enumerate(d.find_elements("css selector", "select.player")):
        Select(sel).select_by_visible_text("human" if i == 0 else ("random" if i % 2 else "heuristic"))
    d.find_element("id", "seed").send_keys("5")
    d.find_element("id", "options").send_keys(ONE_HAND[game])
    d.find_element("id", "new-game").click()
    wait_for(d, lambda: settled(d), "the game starts")


def click_and_wait(d, el) -> None:
    before = status(d)[1]
    el.click()
    wait_for(d, lambda: status(d)[1] != before and settled(d), "the move is played and the bots answer")


def next_move(d):
    """The element to click: the special action that moves the game on (play on, declare done) in the
    Ottocento phases that ask for one, else a legal card, else the first special action."""
    phase = d.find_element("id", "status").text
    specials = d.find_elements("css selector", "#specials button.special")
    if specials and ("A_MONTE" in phase or "DECLARE" in phase):
        return specials[-1]
    cards = d.find_elements("css selector", "#hand .card.legal")
    return cards[0] if cards else specials[0]


def refused_illegal_click(d) -> bool:
    """Click a card that is not legal now: the server refuses it and the table stays as it was."""
    illegal = d.find_elements("css selector", "#hand .card.illegal")
    if not illegal:
        return False
    before = (status(d), len(d.find_elements("css selector", "#hand .card")))
    illegal[0].click()
    wait_for(d, lambda: "refused" in d.find_element("id", "message").text, "the illegal click is refused")
    assert d.find_element("id", "message").get_attribute("class") == "error"
    assert (status(d), len(d.find_elements("css selector", "#hand .card"))) == before
    return True


def ask_hint(d) -> None:
    d.find_element("id", "hint").click()
    wait_for(d, lambda: "%" in d.find_element("id", "hint-box").text, "the hint shows the network's probabilities")


def undo(d) -> None:
    hand = len(d.find_elements("css selector", "#hand .card"))
    button = d.find_element("id", "undo")
    assert button.is_enabled()
    click_and_wait(d, button)
    assert "undone" in d.find_element("id", "message").text
    assert len(d.find_elements("css selector", "#hand .card")) >= hand


@pytest.mark.parametrize("game", ["partita", "millone", "ottocento"])
def test_a_whole_hand_is_played_in_the_browser_by_clicks(browser, server, game, tmp_path):
    d = browser
    start_game(d, server, game)
    notes = d.find_elements("css selector", "#explain .note")  # the first phase, explained in words
    fetched = d.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    assert fetched and all(url.startswith(server + "/") for url in fetched)  # nothing from elsewhere
    phase = d.find_element("id", "status").text.split(" · ")[2]
    assert notes and notes[0].get_attribute("data-key") == f"{game}:{phase}"
    refused = hinted = undone = False
    moves = 0
    while status(d)[0] == "your-turn":
        refused = refused or refused_illegal_click(d)
        if not hinted:
            ask_hint(d)
            hinted = True
        click_and_wait(d, next_move(d))
        moves += 1
        if moves == 2 and not undone and status(d)[0] == "your-turn" and d.find_element("id", "undo").is_enabled():
            undo(d)
            undone = True
        if moves == 6:
            d.save_screenshot(str(tmp_path / f"{game}-table.png"))
            if game == "ottocento" and os.environ.get("TAROT_WEB_SCREENSHOT"):
                d.save_screenshot(os.environ["TAROT_WEB_SCREENSHOT"])
    assert status(d)[0] == "over", d.find_element("id", "status").text
    results = d.find_elements("css selector", "#results .result")
    assert len(results) == 1 and results[0].text.startswith(("-- deal 1", "-- hand 1"))
    assert refused and hinted and undone
    d.save_screenshot(str(tmp_path / f"{game}-end.png"))
    assert (tmp_path / f"{game}-end.png").stat().st_size > 10_000
    replay_in_the_page(d, tmp_path / f"{game}.jsonl")


def replay_in_the_page(d, path) -> None:
    """Fetch the finished game's log from the page's download link, load it with the page's "replay a
    log" input, and step to its end: the replay reaches the same final scores."""
    import httpx

    link = d.find_element("id", "download")
    assert "disabled" not in link.get_attribute("class")
    path.write_text(httpx.get(link.get_attribute("href")).text)
    scores = d.find_element("id", "scores").text
    d.find_element("id", "replay-file").send_keys(str(path))
    wait_for(d, lambda: status(d)[0] == "replay", "the page replays the downloaded log")
    assert "step 0 of" in d.find_element("id", "status").text
    d.find_element("id", "replay-last").click()
    wait_for(d, lambda: "GAME_OVER" in d.find_element("id", "status").text, "the replay steps to the end")
    assert d.find_element("id", "scores").text == scores
