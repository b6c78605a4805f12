"""`/api/account/keys`: personal access tokens, managed from a browser session only."""

from __future__ import annotations

from quart import Blueprint
from quart_schema import validate_request, validate_response

from api.accounts.actions import mint_access_token
from api.accounts.schemas import CreatedKey, CreateKeyRequest, KeyList, KeyOut
from api.http.auth import current_principal
from api.http.errors import found
from api.http.openapi import operation
from api.http.openapi_links import ACCESS_TOKEN
from api.services import services
from store import AccessTokenRecord

blueprint = Blueprint("keys", __name__, url_prefix="/api/account/keys")

SHOWN_ONCE = "Copy this token now: it is shown once and cannot be recovered."


def _key_out(record: AccessTokenRecord) -> dict[str, object]:
    return {
        "id": record.id,
        "label": record.label,
        "scopes": list(record.scopes),
        "created_at": record.created_at,
        "last_used_at": record.last_used_at,
        "revoked_at": record.revoked_at,
        "revoked": record.revoked_at is not None,
    }


@blueprint.post("")
@operation("createAccessToken", access="browser", links=ACCESS_TOKEN.links())
@validate_request(CreateKeyRequest)
@validate_response(CreatedKey, 201)
async def create_key(data: CreateKeyRequest) -> tuple[CreatedKey, int]:
    """Create a personal access token; the plaintext `nsc_...` is in this answer only."""
    principal = current_principal()
    minted = await mint_access_token(
        services(),
        user_id=principal.user_id,
        workspace_id=principal.workspace_id,
        label=data.label,
        scopes=tuple(data.scopes),
    )
    return CreatedKey.model_validate(
        {**_key_out(minted.record), "token": minted.plaintext, "warning": SHOWN_ONCE}
    ), 201


@blueprint.get("")
@operation("listAccessTokens", access="browser")
@validate_response(KeyList, 200)
async def list_keys() -> KeyList:
    """The caller's tokens, newest first: label, scopes, created, last used, revoked."""
    principal = current_principal()
    records = await services().store.list_access_tokens(principal.user_id)
    return KeyList.model_validate({"keys": [_key_out(r) for r in records]})


@blueprint.delete("/<id:key_id>")
@operation("revokeAccessToken", access="browser")
@validate_response(KeyOut, 200)
async def revoke_key(key_id: str) -> KeyOut:
    """Revoke a token at once (idempotent). Another user's token is a 404."""
    principal = current_principal()
    record = found(
        await services().store.revoke_access_token(user_id=principal.user_id, token_id=key_id),
        "access token",
    )
    services().sessions.drop_token(key_id)
    return KeyOut.model_validate(_key_out(record))
