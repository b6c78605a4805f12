"""The simulator serves the photos its items link to (issue 32, item 10): small PNGs on the site
origin, the same bytes for the same URL, outside the fault knobs and the request budget, and
behind the site's challenge only when the site is."""

from __future__ import annotations

import struct

import httpx

from scrapers.simulator import Faults, SimulatorConfig
from scrapers.simulator._photos import FULL_SIZE, THUMBNAIL

from ._challenged import BROWSER_UA, browser_like, is_challenge, two_origins

CONFIG = SimulatorConfig(seed=4, n_listings=200, arrivals_per_day=0, profile="2026-09")


def _png_size(body: bytes) -> tuple[int, int]:
    assert body[:8] == b"\x89PNG\r\n\x1a\n" and body[12:16] == b"IHDR", body[:16]
    width, height = struct.unpack(">II", body[16:24])
    return width, height


async def test_every_photo_url_of_the_catalogue_answers_an_image_on_the_site() -> None:
    async with two_origins(CONFIG) as sim, httpx.AsyncClient(timeout=10) as http:
        token = (await http.get(f"{sim.site}/")).cookies["access_token_web"]
        feed = await http.get(f"{sim.api}/svc-catalogue/items?per_page=20",
                              headers={"authorization": f"Bearer {token}"})  # fmt: skip
        items = feed.json()["items"]
        assert len(items) == 20
        bodies = set()
        for item in items:
            # The catalogue was answered on the API origin; its photos are on the site's.
            url, full = item["photo"]["url"], item["photo"]["full_size_url"]
            assert url.startswith(f"{sim.site}/photos/") and full.startswith(sim.site)
            photo = await http.get(url)
            assert photo.status_code == 200 and photo.headers["content-type"] == "image/png"
            assert _png_size(photo.content) == THUMBNAIL and len(photo.content) < 4000
            assert _png_size((await http.get(full)).content) == FULL_SIZE
            assert (await http.get(url)).content == photo.content  # the same URL, the same image
            bodies.add(photo.content)
        assert len(bodies) > 5  # listings look apart
        assert (await http.head(url)).status_code == 200
        for missing in ("/photos/1.jpg", "/photos/abc.jpg", "/photos/"):
            assert (await http.get(f"{sim.site}{missing}")).status_code == 404
        api_photo = url.replace(sim.site, sim.api)
        assert (await http.get(api_photo)).json()["code"] == 104  # not the API origin's


async def test_photos_stand_outside_the_fault_knobs_but_behind_the_sites_challenge() -> None:
    async with two_origins(CONFIG) as sim, httpx.AsyncClient(timeout=10) as http:
        world = sim.app.world
        item_id = next(i.id for i in world.listings if i.state_at(world.config.start) == "open")
        photo = f"{sim.site}/photos/{item_id}.jpg"
        await sim.side_door("faults", {"first_429": 1, "rate_5xx": 1.0})
        assert (await http.get(photo)).status_code == 200  # no session, no fault
        assert sim.app.faults == Faults(first_429=1, rate_5xx=1.0)
        assert (await http.get(f"{sim.site}/items/{item_id}")).status_code == 429  # still due
        await sim.side_door("faults", {})
        await sim.side_door("challenge", {"www": True})
        async with browser_like(BROWSER_UA) as browser:
            assert is_challenge(await browser.get(photo))
