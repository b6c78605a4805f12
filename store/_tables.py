"""Every table of the schema, registered on `Base.metadata` here and nowhere else.

Each resource's models module defines its tables on `store/_db/base.py`'s `Base`; a table is
on the metadata once its module is imported. This module imports all of them, explicitly, for
what needs the whole schema at once: Alembic's environment (`store/migrations/env.py`) and the
tests that compare the migrations with the models. A new models module is added here.
"""

from __future__ import annotations

from ._db.base import Base
from .accounts import confirmation_models as _confirmation_models
from .accounts import models as _account_models
from .billing import models as _billing_models
from .cluster import models as _cluster_models
from .market import models as _market_models
from .market import price_book_models as _price_book_models
from .monitors import models as _monitor_models
from .notify import models as _notify_models
from .runs import models as _run_models

MODELS = (
    _account_models,
    _confirmation_models,
    _billing_models,
    _cluster_models,
    _market_models,
    _price_book_models,
    _monitor_models,
    _notify_models,
    _run_models,
)
metadata = Base.metadata

__all__ = ["MODELS", "Base", "metadata"]
