"""A newcomer's first minutes, in Chromium, on a fresh `serve --demo` (the simulator, the demo
account, its sample month and live monitor): what a person would check is what is asserted.
Named niches, durations in days a reseller would believe, the reasons behind a rank, a niche's
own listings, an alert, four graphs that fit and read at desktop and phone width, the
trial's "Analyse this monitor" with the defaults, and its alerts as cards on a phone."""

from __future__ import annotations

import csv
import io
import re
import time
from typing import Any

from tests.web._graph_checks import MIN_TEXT_PX, assert_graphs_fit
from tests.web._phone_checks import broken_words, loose_values, too_wide
from tests.web.conftest import InBrowser, StartWeb, screenshot

SAMPLE = "Sample data · a month of the simulated marketplace"
WAIT = 120.0  # the sample month is recorded in the background after start-up: seconds
DESKTOP, PHONE = {"width": 1280, "height": 860}, {"width": 390, "height": 844}


def _wait_for_text(page: Any, url: str, text: str) -> None:
    """Reload `url` until it shows `text` (work done in the background), within `WAIT`."""
    deadline = time.monotonic() + WAIT
    while True:
        page.goto(url)
        if text in page.content():
            return
        assert time.monotonic() < deadline, f"{text!r} never appeared on {url}"
        page.wait_for_timeout(1000)


async def test_a_newcomer_sees_the_products_point(
    start_web: StartWeb, in_browser: InBrowser[Any]
) -> None:
    service = await start_web(demo=True)
    password = (service.settings.outbox_dir.parent / "demo_credentials.txt").read_text().strip()
    base = service.url

    def scenario(page: Any) -> None:
        problems: list[str] = []
        page.on("pageerror", lambda err: problems.append(str(err)))
        page.on("response", lambda r: r.status >= 500 and problems.append(f"{r.status} {r.url}"))
        page.goto(f"{base}/login")
        page.get_by_label("E-mail").fill("demo@example.com")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/dashboard")

        # The dashboard holds the sample month's niches, named as people know them.
        _wait_for_text(page, f"{base}/dashboard", "The niches of ")
        assert "Live · the simulated marketplace" in page.content()
        screenshot(page, "newcomer-dashboard")
        page.locator(".lede").get_by_role("link", name=SAMPLE).click()
        page.wait_for_url(re.compile(r"/analyses/an_"))
        analysis_url = page.url
        assert page.locator("h1").inner_text() == SAMPLE

        names = page.locator('td[data-label="Niche"] strong').all_inner_texts()
        exact = [n for n in names if " › " in n and " · size " in n]
        assert len(names) >= 10 and len(exact) >= 8, names
        assert not any(re.search(r"\bcat(egory)? \d+", n) for n in names), names

        # Days to sell a reseller would believe: days, not years, and most niches timed.
        cells = page.locator('td[data-label="Median days to sell"]')
        days = [float(d) for d in cells.evaluate_all("cs => cs.map(c => c.dataset.days)") if d]
        assert len(days) >= 8 and all(0.05 <= d <= 30 for d in days), days

        # The reasons behind rank 1, one click away.
        why = page.locator("details.why").first
        why.locator("summary").click()
        reasons = why.inner_text()
        assert "Score:" in reasons and "per listing-day" in reasons, reasons
        assert "95% interval" in reasons and "confirmed by the marketplace" in reasons, reasons
        evidence = page.locator("[data-evidence]").inner_text()
        assert "marketplace's own clock" in evidence and "polls" in evidence, evidence

        # An alert says what happened and why.
        alerts = page.locator("ul.alerts li").all_inner_texts()
        assert alerts and all(len(a) > 40 for a in alerts[:5]), alerts[:5]
        # ... and so does its download: one row per alert under the header.
        run_path = page.get_by_role("link", name="The run").get_attribute("href")
        download = page.request.get(f"{base}/api{run_path}/alerts-download").text()
        rows = list(csv.reader(io.StringIO(download)))
        assert rows[0][:2] == ["kind", "niche"] and len(rows) - 1 >= len(alerts), rows[:2]
        assert all(row[7] for row in rows[1:])  # every alert says why

        # Four graphs that fit a desktop and a phone, on the analysis and the dashboard:
        # nothing wider than the screen, no text under 11 px as drawn, no two niche map
        # labels overlapping, an asked band for each of the top 5 niches.
        for viewport in (DESKTOP, PHONE):
            page.set_viewport_size(viewport)
            for where, url in (("analysis", analysis_url), ("dashboard", f"{base}/dashboard")):
                page.goto(url)
                sizes = assert_graphs_fit(page, top=5)
                assert min(sizes.values()) >= MIN_TEXT_PX, (viewport, where, sizes)
                screenshot(page, f"newcomer-{where}-{viewport['width']}")
        page.set_viewport_size(DESKTOP)
        page.goto(analysis_url)

        # A niche's own listings, one click from its name.
        top = page.locator('td[data-label="Niche"] a').first
        niche_name = top.inner_text()
        top.click()
        page.wait_for_url(re.compile(r"/monitors/mon_.*brand="))
        assert "Showing the niche" in page.locator("[data-niche-filter]").inner_text()
        brands = page.locator('#listings td[data-label="Brand"]').all_inner_texts()
        assert brands and all(b in niche_name for b in brands), (niche_name, brands)

        # The trial's main button on the live monitor, with the defaults, succeeds.
        page.goto(f"{base}/monitors")
        page.get_by_role("link", name="Live · the simulated marketplace").click()
        page.wait_for_function(
            "() => !document.body.textContent.includes('Listings appear here once')",
            timeout=WAIT * 1000,
        )
        _assert_the_clocks_are_named(page)
        page.get_by_role("button", name="Analyse this monitor").click()
        page.wait_for_url(re.compile(r"/runs/run_"))
        page.wait_for_function(
            "() => document.querySelector('h1 .state').textContent.trim() === 'Done'",
            timeout=WAIT * 1000,
        )
        # The dashboard keeps the sample month: minutes of the live monitor are below the
        # trust floor, and the dashboard names the newer analysis instead of showing it.
        page.goto(f"{base}/dashboard")
        assert page.locator("[data-dashboard-choice]").get_attribute("data-dashboard-choice") == (
            "trusted"
        )
        assert SAMPLE in page.locator(".lede").inner_text()
        newer = page.locator("[data-newer-analysis]").inner_text()
        assert "Live · the simulated marketplace" in newer and "below the trust floor" in newer
        screenshot(page, "newcomer-dashboard-after-analysing")

        # The tables as cards on a phone: each value one piece at the card's right edge (a
        # monitor's sold count and a run's state once sat mid-card beside an empty span).
        page.set_viewport_size(PHONE)
        for path in ("/dashboard", "/monitors", "/runs"):
            page.goto(f"{base}{path}")
            assert loose_values(page) == [], (path, loose_values(page))

        # The live monitor's alerts, as cards on a phone: whole words ("New listin g" was
        # one), nothing wider than the screen.
        _wait_for_text(page, f"{base}/notifications", 'data-label="What"')
        assert broken_words(page) == [] and too_wide(page) == [], (
            broken_words(page),
            too_wide(page),
        )
        screenshot(page, "newcomer-alerts-390")
        assert problems == [], problems

    await in_browser(scenario)


def _assert_the_clocks_are_named(page: Any) -> None:
    """The monitor page names each clock: checks on ours, relative to now and counted on by
    live.js every second; the marketplace's at the last check; the listings' column."""
    checks = page.locator("#checks").text_content()
    assert "our clock" in checks and "Marketplace's clock" in checks, checks
    assert re.search(
        r"(just now|\d+ (s|min) ago)", page.locator("[data-monitor-last]").inner_text()
    )
    assert "Since (marketplace's clock)" in page.locator("#listings thead").text_content()
    # live.js counts on: a check 30 s ago reads so within a second or two.
    page.evaluate(
        "() => document.querySelector('[data-monitor-last]')"
        ".setAttribute('data-at', new Date(Date.now() - 30000).toISOString())"
    )
    page.wait_for_function(
        "() => /^3[0-3] s ago$/.test(document.querySelector('[data-monitor-last]').textContent)",
        timeout=5000,
    )
