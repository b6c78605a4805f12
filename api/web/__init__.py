"""The web app: server-rendered pages for people (sign-up, sign-in, account keys, dashboard).

Pages call the same functions as the JSON API (the resources' `actions`, the Store), never
the API over HTTP. Every state-changing form carries a CSRF token (`csrf.py`); every page is
sent with a strict Content-Security-Policy (`_blueprint.py`). Add a page: a view in one of the
`*_pages.py` modules (or a new one imported below), a template extending `base.html`.
"""

from api.web import (  # noqa: F401  (they register routes and filters)
    _filters,
    account_pages,
    alert_pages,
    analysis_pages,
    auth_pages,
    billing_pages,
    confirm_pages,
    dashboard_pages,
    monitor_pages,
    notification_pages,
    oidc_pages,
    run_pages,
    settings_pages,
)
from api.web._blueprint import blueprint

__all__ = ["blueprint"]
