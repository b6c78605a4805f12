"""The garbage collector's settings for a long-running process (`nichescope serve`, `worker`)."""

from __future__ import annotations

import gc

# Allocations of tracked objects between two young-generation collections (Python's default
# is 700). A request allocates thousands (a listings page: fifty records, their dicts, the
# framework's per-request objects), nearly all freed by reference counting within the
# request; at 700 the collector ran several times per request and promoted whatever was
# alive at that instant, so the older generations were walked ever more often. Measured on a
# listings-page load (`gc.callbacks` timing every collection): 5-7% of the server's CPU in
# the collector at 700, about 2% at 20,000; each young collection stays under a millisecond.
YOUNG_COLLECTION_THRESHOLD = 20_000


def tune_collector() -> None:
    """Collector settings for a long-running command.

    What the imports built (about 150,000 long-lived objects: modules, classes, functions) is
    left out of every later collection: otherwise each full collection walks them all and
    stops the process for 40-80 ms (measured on a serving node), which lands on whatever
    requests are in flight. And the young generation is collected after
    `YOUNG_COLLECTION_THRESHOLD` allocations instead of 700. Done here, before a
    long-running command, not in `serve()`, which tests call in-process."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, oldest)
