"""`/docs`: Swagger UI over `/openapi.json`, served whole by the service (works offline).

Swagger UI's script and stylesheet come from the `swagger-ui-py` package's files and are
served under `/docs/assets/`; the page names no other origin, runs no inline script and has
its own Content-Security-Policy. quart-schema's own `/docs` (which loads the files from a
CDN) is switched off in the app factory.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from quart import Blueprint, Response, send_from_directory
from werkzeug.exceptions import NotFound

from api.http.csp import content_security_policy

blueprint = Blueprint("api_docs", __name__)

# Found without importing the package (its `__init__` wires web framework handlers we do not
# use); only these two of its files are served.
_SPEC = importlib.util.find_spec("swagger_ui")
SWAGGER_FILES = (
    Path(next(iter(_SPEC.submodule_search_locations))) / "static"
    if _SPEC is not None and _SPEC.submodule_search_locations
    else None
)
SWAGGER_ASSETS = frozenset({"swagger-ui-bundle.js", "swagger-ui.css"})
ASSET_MAX_AGE = 86_400

INIT_SCRIPT = """\
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
  showExtensions: true,
  showCommonExtensions: true
});
"""

PAGE = """\
<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Nichescope API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" href="/assets/logo.svg" type="image/svg+xml">
</head>
<body>
  <div id="swagger-ui">
    <p>Loading the reference of <a href="/openapi.json">/openapi.json</a>…</p>
  </div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/nichescope-docs.js"></script>
</body>
</html>
"""

# Swagger UI styles its widgets with inline style attributes; everything else is 'self'.
CONTENT_SECURITY_POLICY = content_security_policy("'self' 'unsafe-inline'")


@blueprint.after_request
async def _headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


@blueprint.get("/docs")
async def swagger_ui() -> Response:
    return Response(PAGE, content_type="text/html; charset=utf-8")


@blueprint.get("/docs/assets/nichescope-docs.js")
async def init_script() -> Response:
    response = Response(INIT_SCRIPT, content_type="text/javascript; charset=utf-8")
    response.headers["Cache-Control"] = f"public, max-age={ASSET_MAX_AGE}"
    return response


@blueprint.get("/docs/assets/<name>")
async def swagger_asset(name: str) -> Response:
    if name not in SWAGGER_ASSETS or SWAGGER_FILES is None:
        raise NotFound()
    response = await send_from_directory(SWAGGER_FILES, name)
    response.headers["Cache-Control"] = f"public, max-age={ASSET_MAX_AGE}"
    return response
