"""Listing ids: allotted when a listing's draft is made, which is not always when it is published.

Since September 2026 a newest-first feed shows listings published now with ids days older than
their neighbours (MARKETPLACE.md): the seller made the draft days ago, and the id came with the
draft. `SimulatorConfig.draft_share` of the listings published after the start are such drafts,
made `DRAFT_DAYS` (uniformly) before their publication; every other id is allotted at
publication. Ids follow allotment order, so a draft's id is lower than the ids of the listings
published between its draft and its publication.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

FIRST_ID = 5_000_000_000
ID_STEP = 3  # gaps between ids, as the real site has (ids of other countries, deleted drafts)
DRAFT_DAYS = (1.0, 10.0)  # how long before its publication a draft listing's id was allotted
_DAY = 86_400.0


def allot_ids(
    published: Sequence[tuple[int, float]],
    seed: int,
    draft_share: float,
    start: float,
    *,
    first_id: int = FIRST_ID,
) -> dict[int, tuple[int, float | None]]:
    """Ids for listings given as (draw index, publication time), in publication order:
    draw index -> (id, when its draft was made, or None when the id came at publication).
    The first id allotted is `first_id`.

    Deterministic with `seed`. The draws come from their own generator, and none is made at
    `draft_share == 0`, so a world without drafts keeps exactly the ids it always had.
    """
    drafted: dict[int, float] = {}
    if draft_share > 0:
        rng = random.Random(f"draft-ids:{seed}")
        for index, born in published:
            if born >= start and rng.random() < draft_share:
                drafted[index] = born - rng.uniform(*DRAFT_DAYS) * _DAY
    order = sorted(published, key=lambda p: (drafted.get(p[0], p[1]), p[0]))
    return {
        index: (first_id + n * ID_STEP, drafted.get(index)) for n, (index, _) in enumerate(order)
    }
