"""The web app: server-rendered pages for people (sign-up, sign-in, account keys, dashboard).

Pages call the same functions as the JSON API (`api.identity`, the Store), never the API over
HTTP. Every state-changing form carries a CSRF token (`csrf.py`); every page is sent with a
strict Content-Security-Policy (`_blueprint.py`). Add a page: a view in one of the `*_pages.py`
modules (or a new one imported below), a template extending `base.html`.
"""

from . import account_pages, auth_pages, oidc_pages  # noqa: F401  (they register routes)
from ._blueprint import blueprint

__all__ = ["blueprint"]
