"""`whoami`: the caller's user, workspace and token scopes (what `GET /api/auth/me` answers)."""

from __future__ import annotations

from api.accounts.actions import describe_me
from api.accounts.schemas import MeResponse
from api.http.auth import Principal
from api.http.errors import found
from api.mcp._registry import READ_ONLY, Tool
from api.mcp.tools._inputs import NoArguments
from api.services import services


async def whoami(principal: Principal, arguments: NoArguments) -> MeResponse:
    # The same store call and document as GET /api/auth/me, so agents and REST agree.
    svc = services()
    user = found(await svc.store.get_user(principal.user_id), "user")
    return await describe_me(svc, user, principal)


TOOL = Tool(
    name="whoami",
    title="Who am I",
    description=(
        "The user and workspace this access token acts for, and the token's scopes. "
        "Call it first to check the token works and what it may do."
    ),
    scope="read",
    input_model=NoArguments,
    output_model=MeResponse,
    annotations=READ_ONLY,
    handler=whoami,
)
