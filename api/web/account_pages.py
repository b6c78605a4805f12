"""Signed-in pages: the dashboard and `/account/keys` (personal access tokens).

Keys are managed from a browser session only, as in the JSON API: these views look at the
session cookie and never at a bearer header.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import ValidationError
from quart import Response, request

from api.accounts.actions import mint_access_token
from api.accounts.schemas import CreateKeyRequest
from api.http.auth import Principal
from api.services import services
from api.web import csrf, flash
from api.web._blueprint import blueprint
from api.web._render import field_errors, page, person, see_other
from store import Store

T = TypeVar("T")


class SignInNeeded(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


@blueprint.errorhandler(SignInNeeded)
async def _to_sign_in(err: SignInNeeded) -> Response:
    return see_other(f"/login?notice=signin-needed&next={quote(err.path, safe='/')}")


async def signed_in() -> Principal:
    """The signed-in person, or a redirect to the sign-in page (which comes back here)."""
    who = await person()
    if who is None:
        raise SignInNeeded(request.path)
    return who


async def signed_in_form() -> Principal:
    """The signed-in person submitting a form, once its session CSRF token is checked (a
    visitor who is not signed in is sent to sign in first, as by `signed_in`)."""
    who = await signed_in()
    await csrf.check("session")
    return who


async def signed_in_record(owned: Callable[[Store, str, str], Awaitable[T]], record_id: str) -> T:
    """`owned(store, record_id, the signed-in person's workspace)`, whose `NotFound` (another
    workspace's record or none) is the 404 page. A form acting on it (any method but GET and
    HEAD) has its session CSRF token checked first: decided by the request, not by the
    caller, so that no handler can forget it."""
    reading = request.method in ("GET", "HEAD")
    who = await (signed_in() if reading else signed_in_form())
    return await owned(services().store, record_id, who.workspace_id)


async def _keys_page(who: Principal, *, status: int = 200, **context: Any) -> Response:
    keys = await services().store.list_access_tokens(who.user_id)
    context.setdefault("form", {"label": "", "scopes": ["read"]})
    context.setdefault("errors", {})
    return await page("keys.html", status=status, keys=keys, **context)


@blueprint.get("/account/keys")
async def keys() -> Response:
    return await _keys_page(await signed_in())


@blueprint.post("/account/keys")
async def create_key() -> Response:
    who = await signed_in_form()
    form = await request.form
    values = {"label": form.get("label", "").strip(), "scopes": form.getlist("scopes")}
    try:
        data = CreateKeyRequest.model_validate(values)
    except ValidationError as err:
        return await _keys_page(who, status=422, form=values, errors=field_errors(err))
    minted = await mint_access_token(
        services(),
        user_id=who.user_id,
        workspace_id=who.workspace_id,
        label=data.label,
        scopes=tuple(sorted(set(data.scopes))),
    )
    # The plaintext goes to the page the redirect leads to in a sealed one-shot cookie
    # (`flash`), never in a URL: that page shows it once, and reloading it shows the list
    # without it.
    created = {"label": minted.record.label, "plaintext": minted.plaintext}
    return flash.carry(see_other("/account/keys"), "/account/keys", created=created)


@blueprint.post("/account/keys/<id:key_id>/revoke")
async def revoke_key(key_id: str) -> Response:
    who = await signed_in_form()
    record = await services().store.revoke_access_token(user_id=who.user_id, token_id=key_id)
    if record is None:
        return await _keys_page(
            who, status=404, error="That key does not exist, or it is not yours."
        )
    services().sessions.drop_token(key_id)
    return see_other("/account/keys?notice=revoked")
