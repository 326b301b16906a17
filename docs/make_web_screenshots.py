"""Regenerate the README's screenshots of the web table (docs/images/web-*.png).

    python docs/make_web_screenshots.py

Starts ``ono-web`` on a free port, opens it in headless Chromium (Debian's ``chromium``,
driven by Playwright), deals an ``ono`` game for four against ``ppo-any``, ``greedy`` and a
typed ``pimc:8`` with "what the agents think" on, plays a few decisions, and saves the table
(web-table.png); plays to the end and saves the end screen with every hand (web-end.png); then
saves the game's replay viewer at its first key event (web-replay.png). Needs the ``[web]``
extra, playwright and chromium.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).parent / "images"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def decide(page) -> None:
    """One decision by clicking: the first playable card (and a wild's first colour), else the
    first button; then wait for the next view."""
    move = page.get_attribute("body", "data-move")
    playable = page.locator("#hand .card.playable")
    if playable.count():
        playable.first.click()
        if page.locator("#chooser:not([hidden]) button").count():
            page.locator("#chooser button").first.click()
    else:
        page.locator("#buttons button").first.click()
    page.wait_for_function(f"document.body.dataset.move !== '{move}' || "
                           f"document.body.dataset.finished === 'true'")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.apps.web.server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = re.search(r"http://\S+/", proc.stdout.readline()).group(0)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            page.goto(url)
            page.wait_for_selector("#f-opponents select")
            page.select_option("#f-rules", "ono")
            page.fill("#f-players", "4")
            page.dispatch_event("#f-players", "change")
            page.wait_for_selector("[data-opponent='2']")
            page.select_option("[data-opponent='0']", "ppo-any")
            page.select_option("[data-opponent='1']", "greedy")
            page.fill("[data-opponent-text='2']", "pimc:8")
            page.fill("#f-seed", "16")
            page.check("#f-thinking")
            page.click("#start")
            page.wait_for_selector("#screen-game:not([hidden])")
            for _ in range(3):
                decide(page)
            page.locator(".thought").first.evaluate("e => e.open = true")
            page.screenshot(path=str(OUT / "web-table.png"))
            while page.get_attribute("body", "data-finished") != "true":
                decide(page)
            page.screenshot(path=str(OUT / "web-end.png"), full_page=True)
            page.click("#save-replay")
            page.click("#open-replay")
            page.wait_for_selector("#screen-replay:not([hidden])")
            page.click("#rp-key")
            page.screenshot(path=str(OUT / "web-replay.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"wrote {OUT / 'web-table.png'}, {OUT / 'web-end.png'} and {OUT / 'web-replay.png'}")


if __name__ == "__main__":
    main()
