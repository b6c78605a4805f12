"""The whole journey in a real browser, against the marketplace simulator: sign up, start
the trial, start a monitor, see its listings, analyse it, see the four graphs, sign out.

Screenshots of each main page land in `test-artifacts/screenshots/`.
"""

from __future__ import annotations

import re
from typing import Any

import trio

from scrapers.simulator import SimulatorConfig, serve_simulator
from tests.conftest import unique_email
from tests.web._graph_checks import assert_graphs_fit
from tests.web.conftest import SCREENSHOTS, TRIAL, InBrowser, StartWeb, screenshot
from tests.web.test_browser import _sign_up_and_in

SLOW = 30_000  # ms: a bootstrap or an analysis, not a click


async def test_journey_from_sign_up_to_graphs(
    start_web: StartWeb, in_browser: InBrowser[Any], nursery: trio.Nursery
) -> None:
    origin: str = await nursery.start(serve_simulator, SimulatorConfig(seed=3, speed=3600))
    service = await start_web(
        fake_market=False,
        market_origins=(origin,),
        market_rate=0,
        min_poll_seconds=1,
        plan_quotas=TRIAL,
    )
    base = service.url
    email = unique_email("journey")

    def scenario(page: Any) -> None:
        _sign_up_and_in(page, base, email)
        assert page.get_by_text("No analysis yet").is_visible()

        # Without a plan, starting things is refused in words.
        page.get_by_role("link", name="Start a monitor").first.click()
        page.get_by_label("Catalogue URL").fill(f"{origin}/catalog?order=newest_first")
        page.get_by_role("button", name="Start monitor").click()
        assert "no plan or trial yet" in page.get_by_role("alert").inner_text()

        # The trial, confirmed through the e-mailed link.
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Billing").click()
        page.get_by_role("button", name="Start the free trial").click()
        assert page.get_by_text("Check your inbox").is_visible()
        (mail,) = [m for m in service.outbox() if "Confirm your Nichescope trial" in m]
        link = re.search(r"http://\S+/trial/confirm\?token=\S+", mail)
        assert link is not None
        page.goto(link.group(0))
        page.get_by_role("button", name="Start my trial").click()
        assert page.get_by_text("Your free trial has started").is_visible()
        screenshot(page, "trial-started")
        page.goto(f"{base}/billing")
        assert page.get_by_text("Your plan").is_visible()
        screenshot(page, "billing")

        # A monitor on the simulator; the page follows its bootstrap by itself.
        page.goto(f"{base}/monitors")
        page.get_by_label("Catalogue URL").fill(f"{origin}/catalog?order=newest_first")
        page.get_by_label("Name").fill("Simulated catalogue")
        page.get_by_label("Check every (seconds)").fill("1")
        page.get_by_role("button", name="Start monitor").click()
        page.wait_for_url(re.compile(r"/monitors/mon_"))
        monitor_url = page.url.split("?")[0]
        page.get_by_role("cell").first.wait_for(timeout=SLOW)  # listings after the reload
        assert page.get_by_role("navigation", name="Filter listings by state").is_visible()
        # A few checks, counted live on the page: simulated hours pass, things sell.
        page.wait_for_function(
            "() => Number(document.querySelector('[data-monitor-polls]').textContent) >= 3",
            timeout=SLOW,
        )
        page.goto(f"{monitor_url}?state=all")
        assert int(page.locator(".stat-value").first.inner_text()) > 0
        screenshot(page, "monitor")
        page.get_by_role("link", name="Sold").click()
        page.wait_for_url(re.compile(r"state=sold"))
        assert page.get_by_role("link", name="Sold").get_attribute("aria-current") == "page"
        screenshot(page, "monitor-sold")

        # Analyse the monitor's history and see the four graphs.
        page.get_by_role("button", name="Analyse this monitor").click()
        page.wait_for_url(re.compile(r"/runs/run_"))
        screenshot(page, "run")
        page.get_by_role("link", name="See the analysis").click(timeout=SLOW)
        page.wait_for_url(re.compile(r"/analyses/an_"))
        analysis_url = page.url
        _four_graphs_shown(page)
        screenshot(page, "analysis")
        page.locator("section[aria-labelledby=graphs-heading]").screenshot(
            path=str(SCREENSHOTS / "analysis-graphs.png")
        )
        page.get_by_role("link", name="The run").click()
        assert page.get_by_role("link", name="CSV (spreadsheet)").is_visible()
        screenshot(page, "run-done")

        page.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboard").click()
        _four_graphs_shown(page)
        assert page.get_by_role("table").first.get_by_role("row").count() > 1
        screenshot(page, "dashboard-graphs")
        page.goto(f"{base}/runs")
        screenshot(page, "runs")

        page.set_viewport_size({"width": 390, "height": 844})
        for path in ("/dashboard", "/runs", "/monitors", "/billing", monitor_url):
            page.goto(path if path.startswith("http") else f"{base}{path}")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        screenshot(page, "monitor-phone")
        # The graphs of a few minutes' history fit a phone too (the top niches it has).
        for url in (analysis_url, f"{base}/dashboard"):
            page.goto(url)
            assert_graphs_fit(page, top=min(5, page.locator(".graph-key-list li").count()))
        screenshot(page, "dashboard-phone")
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(re.compile(r"/login\?notice=signed-out"))

    await in_browser(scenario)


def _four_graphs_shown(page: Any) -> None:
    """The four SVG graphs are on the page, loaded (rendered by the server), with alt text."""
    graphs = page.locator("figure.graph img")
    assert graphs.count() == 4
    page.wait_for_function(
        "() => [...document.querySelectorAll('figure.graph img')]"
        ".every(img => img.complete && img.naturalWidth > 0)",
        timeout=SLOW,
    )
    for index in range(4):
        assert len(graphs.nth(index).get_attribute("alt")) > 20
