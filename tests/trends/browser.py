"""Drive Debian's Chromium through a published site with Playwright (its own browser download
cannot reach the network here): index -> series -> a point -> its record, and the
regressions page."""

import shutil
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def browse(site: Path, shots: Path, arm: str, step_commit: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            page.goto((site / "index.html").as_uri())
            page.screenshot(path=str(shots / "history-index.png"), full_page=True)
            decode = page.locator("#series tr", has_text="decode_tps")
            decode.get_by_role("link", name=arm, exact=True).click()
            page.wait_for_selector("#plot circle")
            page.screenshot(path=str(shots / "history-series.png"), full_page=True)
            seen: dict[str, Any] = {
                "plotted": page.locator("#plot circle").count(),
                "flagged": page.locator("#plot circle.flagged").count(),
                "step": page.locator("#plot text", has_text=step_commit[:8]).count()}
            point = page.locator(f'#plot circle[data-commit="{step_commit}"]').first
            seen["tooltip"] = point.locator("title").text_content()
            point.click()
            page.wait_for_selector("pre")
            seen["record"] = page.locator("h1").text_content()
            page.screenshot(path=str(shots / "history-record.png"))
            page.locator("nav a", has_text="regressions").click()
            page.wait_for_selector("#regressions td")
            seen["regressions"] = page.locator("#regressions td").first.text_content()
            page.screenshot(path=str(shots / "history-regressions.png"), full_page=True)
        finally:
            browser.close()
    return seen
