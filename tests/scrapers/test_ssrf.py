from __future__ import annotations

import httpx
import pytest
import trio

from scrapers import (
    ClientSettings,
    HttpStatusError,
    MarketClient,
    MarketplaceAdapter,
    UrlRefused,
    check_catalogue_url,
    normalise_origin,
)

from ._servers import RawServer, fixed_response


async def public(host: str, port: int) -> list[str]:
    return ["151.101.1.1"]


def resolving_to(*addresses: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


async def test_marketplace_host_accepted_and_normalised() -> None:
    url = await check_catalogue_url("https://WWW.Vinted.co.uk:443/catalog?x=1", (), resolver=public)
    assert url.url == "https://www.vinted.co.uk/catalog?x=1"
    assert url.origin == "https://www.vinted.co.uk"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme"),
        ("gopher://www.vinted.fr/", "scheme"),
        ("https://user:pw@www.vinted.fr/catalog", "userinfo"),
        ("https://www.vinted.fr@evil.example/catalog", "userinfo"),
        ("https://www.vinted.evil/catalog", "not a marketplace host"),
        ("https://vinted.fr.evil.example/catalog", "not a marketplace host"),
        ("http://www.vinted.fr/catalog", "https on port 443"),
        ("https://www.vinted.fr:8443/catalog", "https on port 443"),
        ("http://127.0.0.1/", "IP address"),
        ("http://169.254.169.254/latest/meta-data/", "IP address"),
        ("http://[::1]/", "IP address"),
        ("http://[::ffff:127.0.0.1]/", "IP address"),
        ("http://[fd00:ec2::254]/", "IP address"),
        ("http://2130706433/", "non-canonical"),
        ("http://0177.0.0.1/", "non-canonical"),
        ("http://0x7f000001/", "non-canonical"),
        ("http://0x7f.0.0.1/", "non-canonical"),
        ("http://127.1/", "non-canonical"),
        ("http://localhost/", "not a marketplace host"),
        ("https://www.vinted.fr/catalog\r\nX: y", "control characters"),
    ],
)
async def test_refused_statically(url: str, reason: str) -> None:
    with pytest.raises(UrlRefused) as info:
        await check_catalogue_url(url, ("http://127.0.0.1:8100",), resolver=public)
    assert reason in info.value.reason


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.0.0.5", "192.168.1.1", "172.16.0.1", "169.254.169.254", "::1",
     "fd00:ec2::254", "::ffff:10.0.0.1", "0.0.0.0", "224.0.0.1", "100.64.0.1"],
)  # fmt: skip
async def test_marketplace_host_resolving_to_private_address_refused(address: str) -> None:
    with pytest.raises(UrlRefused, match="resolves to"):
        await check_catalogue_url(
            "https://www.vinted.fr/catalog", (), resolver=resolving_to(address)
        )


async def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    with pytest.raises(UrlRefused):
        await check_catalogue_url(
            "https://www.vinted.fr/catalog", (), resolver=resolving_to("151.101.1.1", "10.1.1.1")
        )


async def test_unresolvable_host_refused() -> None:
    async def fail(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(UrlRefused, match="does not resolve"):
        await check_catalogue_url("https://www.vinted.fr/catalog", (), resolver=fail)


async def test_allowlist_is_exact_origin() -> None:
    allowed = ("http://127.0.0.1:8100",)
    ok = await check_catalogue_url("http://127.0.0.1:8100/catalog", allowed, resolver=public)
    assert ok.origin == "http://127.0.0.1:8100"
    for url in (
        "http://127.0.0.1:8101/catalog",
        "https://127.0.0.1:8100/",
        "http://localhost:8100/",
    ):
        with pytest.raises(UrlRefused):
            await check_catalogue_url(url, allowed, resolver=public)


def test_normalise_origin() -> None:
    assert normalise_origin(" http://127.0.0.1:8100 ") == "http://127.0.0.1:8100"
    assert normalise_origin("https://sim.example") == "https://sim.example:443"
    for bad in ("ftp://x", "http://x/path", "http://user@x"):
        with pytest.raises(ValueError):
            normalise_origin(bad)


async def test_attacks_never_reach_the_canary() -> None:
    canary = RawServer(fixed_response("200 OK", body=b"secret"))
    async with trio.open_nursery() as nursery:
        canary_origin = await nursery.start(canary.serve)
        port = canary_origin.rsplit(":", 1)[1]
        redirector = RawServer(fixed_response("302 Found", {"Location": f"{canary_origin}/x"}))
        redirector_origin = await nursery.start(redirector.serve)
        settings = ClientSettings(extra_origins=(redirector_origin,), respect_robots=False,
                                  max_retries=0)  # fmt: skip
        attacks = [
            f"{canary_origin}/catalog",
            f"http://localhost:{port}/catalog",
            f"http://2130706433:{port}/catalog",
            f"http://0177.0.0.1:{port}/catalog",
            f"http://0x7f000001:{port}/catalog",
            f"http://[::1]:{port}/catalog",
            f"http://[::ffff:127.0.0.1]:{port}/catalog",
            f"http://169.254.169.254:{port}/latest/meta-data",
            f"http://user@127.0.0.1:{port}/catalog",
            "https://www.vinted.fr/catalog",  # "resolves" to the canary's loopback address
            f"{redirector_origin}/catalog",  # allowlisted, but redirects off the allowlist
        ]
        async with MarketClient(settings, resolver=resolving_to("127.0.0.1")) as client:
            adapter = MarketplaceAdapter(client)
            for url in attacks:
                with pytest.raises(UrlRefused):
                    await client.get(url)
                if url != f"{redirector_origin}/catalog":
                    with pytest.raises(UrlRefused):
                        await adapter.query_for(url)
        assert redirector.hits == 1  # the allowlisted redirector was asked, once
        assert canary.hits == 0
        # The canary does count: a direct request (no guard) is seen, so the zero above is real.
        async with httpx.AsyncClient() as raw:
            assert (await raw.get(f"{canary_origin}/direct")).content == b"secret"
        assert canary.hits == 1
        nursery.cancel_scope.cancel()


async def test_same_origin_redirects_followed_up_to_the_cap() -> None:
    async with trio.open_nursery() as nursery:
        hop = RawServer(fixed_response("301 Moved", {"Location": "/final"}))
        hop_origin = await nursery.start(hop.serve)
        settings = ClientSettings(
            extra_origins=(hop_origin,), respect_robots=False, max_redirects=3
        )
        async with MarketClient(settings) as client:
            with pytest.raises(HttpStatusError) as info:
                await client.get(f"{hop_origin}/start")
        assert info.value.status == 301
        assert hop.paths == ["/start", "/final", "/final", "/final"]
        nursery.cancel_scope.cancel()
