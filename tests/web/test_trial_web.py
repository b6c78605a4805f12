"""A trial with its real limits in the web pages: forms that show only the fields that apply,
analyses that default to what the plan allows, quota errors naming the next plan up, counts
and names in the lists, status that follows the work without a reload, and `/docs` served
whole by the service."""

from __future__ import annotations

import re
from typing import Any

import trio

from api.naming import catalogue_name
from tests.api.helpers import PASSWORD, signed_in, wait_finished_run
from tests.api.test_plan_defaults import HELD, TRIAL, URL
from tests.engine.fake_market import FakeMarket
from tests.web.conftest import InBrowser, StartWeb, screenshot
from tests.web.test_pages import csrf_of

SLOW = 15_000  # ms: a run or a monitor's first look, not a click


def _stock(market: FakeMarket) -> None:
    for item in range(1, HELD + 1):
        market.list(item, price=f"{10 + item % 7}.00")


async def test_trial_forms_default_to_the_plan(start_web: StartWeb, market: FakeMarket) -> None:
    _stock(market)
    service = await start_web(plan_quotas=TRIAL, min_poll_seconds=1)
    async with service.client() as client:
        await signed_in(client)
        page = await client.get("/runs")
        assert 'name="max_items"' in page.text and "the most your plan allows: 200" in page.text
        token = csrf_of(page.text)
        form = {"csrf_token": token, "source": "url", "url": URL, "max_items": ""}
        # An empty box reads what the plan allows.
        started = await client.post("/runs", data=form)
        assert started.status_code == 303, started.text
        run_id = started.headers["location"].split("/")[2].split("?")[0]
        assert (await wait_finished_run(client, run_id))["items"] == 200
        # Too many: the limit and the next plan up, in words, on the form.
        refused = await client.post("/runs", data={**form, "max_items": "960"})
        assert refused.status_code == 403
        assert "The Starter plan allows 1000 listings per run" in refused.text
        assert "largest plan" not in refused.text and "POST /api" not in refused.text

        monitor = await client.post(
            "/monitors", data={"csrf_token": token, "source": "url", "url": URL, "label": "Jeans"}
        )
        monitor_id = monitor.headers["location"].split("/")[2].split("?")[0]
        with trio.fail_after(60):
            while (await client.get(f"/api/monitoring/{monitor_id}")).json()["bootstrapping"]:
                await trio.sleep(0.05)
        # "Analyse this monitor" sends no number: the whole history, whatever it holds; a
        # number left in the hidden box does not matter either.
        for extra in ({}, {"max_items": "960"}):
            analysed = await client.post(
                "/runs",
                data={"csrf_token": token, "source": "monitor", "monitor_id": monitor_id, **extra},
            )
            assert analysed.status_code == 303, analysed.text
            run_id = analysed.headers["location"].split("/")[2].split("?")[0]
            assert (await wait_finished_run(client, run_id))["items"] == HELD
        monitors = (await client.get("/monitors")).text
        assert re.search(rf'data-count="open">{HELD}<', monitors), monitors
        analyses = (await client.get("/analyses")).text
        # The unnamed catalogue run is named after what its URL asks for, never the URL.
        assert ">Jeans</a>" in analyses and f">{catalogue_name(URL)}</a>" in analyses
        assert f">{URL}</a>" not in analyses
        assert not re.search(r">an_[0-9a-f]+</a>", analyses)


async def test_trial_pages_follow_the_work_in_a_browser(
    start_web: StartWeb, market: FakeMarket, in_browser: InBrowser[Any]
) -> None:
    _stock(market)
    service = await start_web(plan_quotas=TRIAL, min_poll_seconds=1)
    base = service.url
    async with service.client() as client:
        email = await signed_in(client)

    def hold_the_market() -> None:
        market.gate = trio.Event()

    def release_the_market() -> None:
        assert market.gate is not None
        market.gate.set()

    def scenario(page: Any) -> None:
        problems: list[str] = []
        page.on("pageerror", lambda err: problems.append(str(err)))
        page.on("console", lambda msg: msg.type == "error" and problems.append(msg.text))
        page.on(
            "response",
            lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"),
        )
        page.goto(f"{base}/login")
        page.get_by_label("E-mail").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/dashboard")

        # The new-analysis form: the listings box only for a catalogue page, empty by default.
        page.goto(f"{base}/runs")
        box = page.get_by_label("At most this many listings")
        assert box.is_visible() and box.input_value() == ""
        page.get_by_label("Catalogue URL").fill(URL)
        trio.from_thread.run_sync(hold_the_market)
        page.get_by_role("button", name="Start analysis").click()
        page.wait_for_url(re.compile(r"/runs/run_"))

        # The run page follows the run without a reload: running, then done with its link.
        page.evaluate("window.sameDocument = true")
        status = page.locator("[data-run-status]")
        page.wait_for_function(
            "() => document.querySelector('[data-run-status]').textContent"
            ".includes('Reading the catalogue')",
            timeout=SLOW,
        )
        assert page.locator("h1 .state").inner_text() == "Running"
        assert page.get_by_role("link", name="See the analysis").is_hidden()
        screenshot(page, "trial-run-running")
        trio.from_thread.run_sync(release_the_market)
        page.get_by_text("Done: 200 listings analysed.").wait_for(timeout=SLOW)
        assert page.locator("h1 .state").inner_text() == "Done"
        assert page.get_by_role("link", name="See the analysis").is_visible()
        assert page.get_by_role("button", name="Run again").is_visible()
        assert page.get_by_role("button", name="Cancel").is_hidden()
        assert page.evaluate("window.sameDocument === true"), "the page was reloaded"
        assert status.inner_text() == "Done: 200 listings analysed."

        # The monitor form: the URL for a catalogue page, the analysis list for an analysis.
        page.goto(f"{base}/monitors")
        page.get_by_label("The catalogue of one of my analyses").check()
        assert page.get_by_label("Catalogue URL").is_hidden()
        assert page.get_by_label("Analysis", exact=True).is_visible()
        page.get_by_label("A catalogue page of the marketplace").check()
        assert page.get_by_label("Analysis", exact=True).is_hidden()
        page.get_by_label("Catalogue URL").fill(URL)
        page.get_by_label("Name").fill("Trial jeans")
        trio.from_thread.run_sync(hold_the_market)
        page.get_by_role("button", name="Start monitor").click()
        page.wait_for_url(re.compile(r"/monitors/mon_"))

        # Its page turns from starting to active, with its counts and listings, in place.
        page.evaluate("window.sameDocument = true")
        assert page.locator("h1 .state").inner_text() == "Starting"
        trio.from_thread.run_sync(release_the_market)
        page.wait_for_function(
            "() => document.querySelector('h1 .state').textContent === 'Active'", timeout=SLOW
        )
        page.wait_for_function(
            f"() => document.querySelector('[data-count=open]').textContent === '{HELD}'",
            timeout=SLOW,
        )
        page.get_by_role("cell").first.wait_for(timeout=SLOW)  # the listings, swapped in
        assert page.get_by_role("button", name="Pause").is_visible()
        assert page.evaluate("window.sameDocument === true"), "the page was reloaded"
        screenshot(page, "trial-monitor-active")

        # "Analyse this monitor" with the defaults: the whole history, named after the monitor.
        page.get_by_role("button", name="Analyse this monitor").click()
        page.wait_for_url(re.compile(r"/runs/run_"))
        page.get_by_text(f"Done: {HELD} listings analysed.").wait_for(timeout=SLOW)
        assert page.get_by_role("heading", level=1).inner_text().startswith("Trial jeans")
        assert page.get_by_text("The monitor's whole history").is_visible()
        page.get_by_role("link", name="See the analysis").click()
        page.wait_for_url(re.compile(r"/analyses/an_"))
        assert page.title().startswith("Trial jeans")

        # The lists: counts per monitor, analyses by name; the form for a monitor's history
        # has no listings box.
        page.goto(f"{base}/monitors")
        row = page.get_by_role("row").filter(has_text="Trial jeans")
        assert row.locator("[data-count=open]").inner_text() == str(HELD)
        screenshot(page, "trial-monitors")
        # Pause and resume from the monitor's page: its buttons carry the form's token.
        row.get_by_role("link", name="Trial jeans").click()
        page.get_by_role("button", name="Pause").click()
        page.wait_for_url(re.compile(r"notice=paused"))
        page.get_by_role("button", name="Resume").click()
        page.wait_for_url(re.compile(r"notice=resumed"))
        page.goto(f"{base}/analyses")
        assert page.get_by_role("link", name="Trial jeans").is_visible()
        assert page.get_by_role("link", name=catalogue_name(URL)).is_visible()
        page.goto(f"{base}/runs")
        page.get_by_label("The history one of my monitors recorded").check()
        assert page.get_by_label("At most this many listings").is_hidden()
        assert page.get_by_label("Catalogue URL").is_hidden()
        assert page.get_by_label("Monitor", exact=True).is_visible()
        screenshot(page, "trial-runs-monitor-form")
        assert problems == [], problems

        # /docs: Swagger UI drawn from the service's own files, no request elsewhere.
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{base}/docs")
        page.locator(".opblock").first.wait_for(timeout=SLOW)
        assert page.locator(".opblock").count() > 20
        assert requested and all(url.startswith(base) for url in requested), requested
        assert problems == [], problems

    await in_browser(scenario)
