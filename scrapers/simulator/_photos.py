"""Listing photos: the images at the URLs the simulator's items carry (`/photos/<id>.jpg`, and
`/photos/<id>-full.jpg` in today's profile), on the site origin.

Webhooks, e-mails and the service's pages link to a listing's photo; a 404 there makes the
demo look broken. Each photo is a small PNG drawn from the listing (the category's backdrop,
the brand's colour, stripes from the id), so listings look apart and the same URL always
answers the same bytes. PNG whatever the extension says: image hosts answer the format they
choose for a URL (content negotiation), and clients go by `content-type`.

Photos stand outside the marketplace's fault knobs and request budget (a browser fetching
thumbnails is not the scraper's traffic); the site's challenge, when on, covers them like any
other path of the site origin.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from functools import lru_cache

from ._answer import Answer
from ._world import World

_PHOTO = re.compile(r"^/photos/(\d+)(-full)?\.jpg$")
THUMBNAIL = (120, 160)
FULL_SIZE = (300, 400)


def is_photo_path(path: str) -> bool:
    return path.startswith("/photos/")


def photo_answer(world: World, path: str, now: float) -> Answer:
    """The photo of a listing published by `now` (sold and deleted ones keep theirs, as image
    hosts do); 404 for any other path under `/photos/`."""
    match = _PHOTO.match(path)
    item = world.by_id.get(int(match.group(1))) if match else None
    if match is None or item is None or item.born > now:
        return Answer(404, b"<h1>Not found</h1>", "text/html")
    size = FULL_SIZE if match.group(2) else THUMBNAIL
    body = photo(item.category_id, item.brand_id, item.id % 4, size)
    return Answer(200, body, "image/png", [("cache-control", "public, max-age=86400")])


@lru_cache(maxsize=1024)
def photo(category_id: int, brand_id: int, stripes: int, size: tuple[int, int]) -> bytes:
    """A `size` (width, height) PNG: the brand's garment with `stripes` darker bands on the
    category's backdrop. Cached: a few hundred distinct images serve every listing."""
    width, height = size
    backdrop = _colour(f"category:{category_id}", light=True)
    body = _colour(f"brand:{brand_id}", light=False)
    band = bytes(max(0, c - 60) for c in body)
    side, top, bottom = width // 5, height // 6, height - height // 8
    plain = backdrop * width
    rows = {
        False: backdrop * side + body * (width - 2 * side) + backdrop * side,
        True: backdrop * side + band * (width - 2 * side) + backdrop * side,
    }
    lines = []
    for y in range(height):
        if not top <= y < bottom:
            lines.append(plain)
            continue
        eighth = (y - top) * 8 // (bottom - top)  # the garment in eight bands, odd ones striped
        lines.append(rows[eighth % 2 == 1 and eighth // 2 < stripes])
    return _png(width, height, lines)


def _colour(key: str, *, light: bool) -> bytes:
    """An RGB colour drawn from `key` (the same in every process: not Python's `hash`)."""
    digest = hashlib.sha256(key.encode()).digest()
    low = 190 if light else 40
    return bytes(low + d % (250 - low) for d in digest[:3])


def _png(width: int, height: int, rows: list[bytes]) -> bytes:
    """An 8-bit RGB PNG of `rows` (each `width` pixels of three bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + row for row in rows), 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )
