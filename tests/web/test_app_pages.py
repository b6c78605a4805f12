"""The app pages over plain HTTP: CSRF refusals of every new form, workspace isolation,
and API errors told as sentences (no browser needed)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import trio

from tests.api.helpers import start_trial
from tests.conftest import RunningService, ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.web.conftest import TRIAL, StartWeb
from tests.web.test_pages import csrf_of, sign_in

URL = "https://www.vinted.fr/catalog?catalog[]=1904"


async def _owner_with_things(client: ServiceClient) -> dict[str, str]:
    """A signed-in owner on the trial with a monitor, a finished run and its analysis."""
    email = await sign_in(client)
    await start_trial(client, email)
    token = csrf_of((await client.get("/monitors")).text)
    started = await client.post(
        "/monitors", data={"csrf_token": token, "source": "url", "url": URL, "interval": "1"}
    )
    assert started.status_code == 303, started.text
    monitor_id = started.headers["location"].split("/")[2].split("?")[0]
    run = await client.post(
        "/runs", data={"csrf_token": token, "source": "url", "url": URL, "max_items": "50"}
    )
    assert run.status_code == 303, run.text
    run_id = run.headers["location"].split("/")[2].split("?")[0]
    with trio.fail_after(60):
        while True:
            state = (await client.get(f"/api/runs/{run_id}")).json()
            if state["state"] not in ("queued", "running"):
                break
            await trio.sleep(0.1)
    assert state["state"] == "succeeded", state
    return {"monitor": monitor_id, "run": run_id, "analysis": state["analysis_id"], "csrf": token}


@pytest.fixture
async def stocked(start_web: StartWeb, market: FakeMarket) -> RunningService:
    """The service on the trial's quotas over a market of forty listings."""
    for item in range(1, 41):
        market.list(item, f"{10 + item % 7}.00")
    return await start_web(plan_quotas=TRIAL, min_poll_seconds=1)


@pytest.fixture
async def client(stocked: RunningService) -> AsyncIterator[ServiceClient]:
    async with stocked.client() as client:
        yield client


@pytest.fixture
async def ids(client: ServiceClient) -> dict[str, str]:
    """`client` signed in as an owner with things (`_owner_with_things`): their ids."""
    return await _owner_with_things(client)


async def test_new_forms_refuse_a_missing_or_wrong_token(
    client: ServiceClient, ids: dict[str, str]
) -> None:
    m, r = ids["monitor"], ids["run"]
    posts = [
        ("/monitors", {"url": URL}),
        (f"/monitors/{m}/pause", {}),
        (f"/monitors/{m}/resume", {}),
        (f"/monitors/{m}/delete", {}),
        ("/runs", {"url": URL}),
        (f"/runs/{r}/cancel", {}),
        (f"/runs/{r}/replay", {}),
        (f"/runs/{r}/delete", {}),
        ("/analyses/import", {}),
        ("/billing/trial", {}),
        ("/billing/checkout", {"plan": "starter"}),
        ("/billing/portal", {}),
    ]
    for path, data in posts:
        for token in (None, "0" * 64):
            form = dict(data) if token is None else {**data, "csrf_token": token}
            refused = await client.post(path, data=form)
            assert refused.status_code == 403, (path, refused.status_code)
            assert "This form has expired" in refused.text
    # Nothing changed: still one monitor, one run, the run not replayed.
    assert len((await client.get("/api/monitoring")).json()["monitors"]) == 1
    assert (await client.get("/api/runs")).json()["total"] == 1
    assert (await client.get(f"/monitors/{m}")).status_code == 200


async def test_another_workspace_sees_404_pages_and_errors_are_sentences(
    stocked: RunningService,
) -> None:
    async with stocked.client() as owner, stocked.client() as stranger:
        ids = await _owner_with_things(owner)
        detail = await owner.get(f"/analyses/{ids['analysis']}")
        assert detail.status_code == 200
        # Four graphs: each an image with its text alternative, or why it has nothing to draw.
        image = re.compile(r'<img src="/api/analyses/an_\w+/graphs/[\w-]+\.svg" alt="')
        for html in (detail.text, (await owner.get("/dashboard")).text):
            drawn, empty = len(image.findall(html)), html.count('class="empty graph-empty"')
            assert html.count('data-graph="') == 4 and drawn + empty == 4 and drawn >= 2
        # A monitor from an analysis's catalogue, and an export imported as a new analysis.
        from_analysis = await owner.post(
            "/monitors",
            data={"csrf_token": ids["csrf"], "source": "analysis", "analysis_id": ids["analysis"]},
        )
        assert from_analysis.status_code == 303, from_analysis.text
        export = await owner.get(f"/api/monitoring/{ids['monitor']}/export")
        imported = await owner.post(
            "/analyses/import",
            data={"csrf_token": ids["csrf"]},
            files={"file": ("export.json", export.content, "application/json")},
        )
        assert imported.status_code == 303
        assert imported.headers["location"].startswith("/analyses/an_")
        broken = await owner.post(
            "/analyses/import",
            data={"csrf_token": ids["csrf"]},
            files={"file": ("export.json", export.content[:50], "application/json")},
        )
        assert broken.status_code == 422
        assert "not valid JSON" in _alert(broken.text)
        await sign_in(stranger)  # no plan yet
        token = csrf_of((await stranger.get("/monitors")).text)
        for path in (
            f"/monitors/{ids['monitor']}",
            f"/runs/{ids['run']}",
            f"/analyses/{ids['analysis']}",
            f"/monitors/{ids['monitor']}/delete",
        ):
            seen = await stranger.get(path)
            assert seen.status_code == 404, path
            assert "Page not found" in seen.text and ids["monitor"] not in seen.text
        for path in (
            f"/monitors/{ids['monitor']}/pause",
            f"/monitors/{ids['monitor']}/delete",
            f"/runs/{ids['run']}/replay",
            f"/runs/{ids['run']}/delete",
        ):
            refused = await stranger.post(path, data={"csrf_token": token})
            assert refused.status_code == 404, path
        # API errors of the shared functions, in words, on the form's page.
        no_plan = await stranger.post(
            "/monitors", data={"csrf_token": token, "source": "url", "url": URL}
        )
        assert no_plan.status_code == 403
        assert "no plan or trial yet" in no_plan.text and "{" not in _alert(no_plan.text)
        refused_url = await stranger.post(
            "/runs", data={"csrf_token": token, "source": "url", "url": "https://evil.example/"}
        )
        assert refused_url.status_code == 400
        assert "Copy the address of a catalogue page" in _alert(refused_url.text)
        billing = await stranger.get("/billing")
        assert "payments have not been set up" in billing.text
        checkout = await stranger.post(
            "/billing/checkout", data={"csrf_token": token, "plan": "starter"}
        )
        assert checkout.status_code == 503
        assert "Payments are not set up on this server yet" in _alert(checkout.text)
        back = await stranger.get("/billing/success", params={"session_id": "cs_x"})
        assert back.status_code == 503 and "Payments are not set up" in _alert(back.text)
        # The owner's monitor and run survived the stranger's attempts.
        survived = await owner.get(f"/monitors/{ids['monitor']}")
        assert survived.status_code == 200
        assert (await owner.get(f"/runs/{ids['run']}")).status_code == 200


def _alert(html: str) -> str:
    found = re.search(r'role="alert">(.*?)</', html, re.S)
    assert found, "no alert on the page"
    return found.group(1)


async def test_numbers_that_only_look_like_digits_are_ignored_or_refused(
    client: ServiceClient, ids: dict[str, str]
) -> None:
    # "²".isdigit() holds and int("²") raises: such a page number once answered 500.
    monitor = f"/monitors/{ids['monitor']}"
    for path in (
        f"{monitor}?page=²", "/runs?page=²", "/runs?page=١٢",
        f"{monitor}?state=all&category={'9' * 150}&brand=x",  # no id: ignored, not a 500
    ):  # fmt: skip
        page = await client.get(path)
        assert page.status_code == 200, (path, page.status_code)
    for field, value in (("interval", "²"), ("max_items", "²")):
        form = {"csrf_token": ids["csrf"], "source": "url", "url": URL, field: value}
        answer = await client.post("/monitors" if field == "interval" else "/runs", data=form)
        assert answer.status_code == 422, (field, answer.status_code)
