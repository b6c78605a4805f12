"""`/docs` works offline: the page names no other origin and its assets come from the service."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.conftest import RunningService


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("src", "href") and value]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # no data involved
async def test_docs_page_and_its_assets_come_from_the_service(service: RunningService) -> None:
    async with service.client() as client:
        page = await client.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        # No other origin anywhere in the page: no absolute or protocol-relative URL at all.
        assert not re.search(r"(https?:)?//", page.text), page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "connect-src 'self'" in csp
        parser = _Links()
        parser.feed(page.text)
        scripts = [link for link in parser.links if link.endswith(".js")]
        styles = [link for link in parser.links if link.endswith(".css")]
        assert len(scripts) == 2 and len(styles) == 1, parser.links
        for link in parser.links:
            assert link.startswith("/"), link
            asset = await client.get(link)
            assert asset.status_code == 200, link
        bundle = await client.get(scripts[0])
        assert "SwaggerUIBundle" in bundle.text and len(bundle.content) > 100_000
        assert bundle.headers["content-type"].startswith(
            ("text/javascript", "application/javascript")
        )
        assert "openapi.json" in (await client.get(scripts[1])).text
        stylesheet = await client.get(styles[0])
        assert stylesheet.headers["content-type"].startswith("text/css")
        assert ".swagger-ui" in stylesheet.text
        # Only Swagger UI's own two files are served from the package, nothing else of it.
        for name in ("LICENSE", "swagger-initializer.js", "..%2F__init__.py", "swagger-editor.js"):
            assert (await client.get(f"/docs/assets/{name}")).status_code == 404, name
