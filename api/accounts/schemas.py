"""Request and response bodies (pydantic), shared by the blueprints and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, EmailStr, Field, field_validator

from api.billing.schemas import BillingSummary
from api.http.security import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from api.http.storable import document_storable_text, storable_field


class Strict(BaseModel):
    # Unknown fields are refused (422) rather than silently dropped: a typo in a request must
    # not pass as a success, and mass assignment has nothing to grab.
    model_config = ConfigDict(extra="forbid", json_schema_extra=document_storable_text)

    _storable = field_validator("*", mode="after")(storable_field)


# The highest page number any paged list accepts (422 above): far past any real list, and
# it keeps `(page - 1) * page_size` inside the database's 64-bit OFFSET.
MAX_PAGE = 1_000_000


def exactly_one_of(first: str, second: str) -> Callable[[dict[str, Any]], None]:
    """`json_schema_extra` for "exactly one of two nullable fields is given", so that the
    document says what the model's validator enforces (and generated clients and fuzzers
    know it); plain strings are marked as `Strict` marks them."""

    def only(given: str, absent: str) -> dict[str, Any]:
        return {
            "required": [given],
            "properties": {given: {"type": "string"}, absent: {"type": "null"}},
        }

    def extra(schema: dict[str, Any]) -> None:
        document_storable_text(schema)
        schema["oneOf"] = [only(first, second), only(second, first)]

    return extra


Password = Field(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)


class RegisterRequest(Strict):
    email: EmailStr
    password: str = Password
    name: str | None = Field(default=None, max_length=200)


class LoginRequest(Strict):
    email: EmailStr
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class ForgotPasswordRequest(Strict):
    email: EmailStr


class ResetPasswordRequest(Strict):
    token: str = Field(min_length=1, max_length=200)
    password: str = Password
    revoke_tokens: bool = Field(
        default=True,
        description="Also revoke every personal access token of the account (a stolen "
        "account's tokens would otherwise keep working); the reset e-mail lists them.",
    )


class UpdateMeRequest(Strict):
    name: str | None = Field(default=None, max_length=200)


class MessageResponse(BaseModel):
    message: str


class UserOut(BaseModel):
    id: str
    email: str
    name: str | None
    created_at: datetime


class WorkspaceOut(BaseModel):
    id: str


class AuthOut(BaseModel):
    via: Literal["session", "token"]
    scopes: list[str]
    token_id: str | None = None


class MeResponse(BaseModel):
    user: UserOut
    workspace: WorkspaceOut
    auth: AuthOut
    operator: bool
    billing: BillingSummary | None = None


Scope = Literal["read", "write"]


class CreateKeyRequest(Strict):
    label: str = Field(min_length=1, max_length=100)
    scopes: list[Scope] = Field(min_length=1, max_length=2)

    @field_validator("label")
    @classmethod
    def _label_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("label must not be blank")
        return value.strip()

    @field_validator("scopes")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("scopes must not repeat")
        return sorted(value)


class KeyOut(BaseModel):
    id: str
    label: str
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    revoked: bool


class CreatedKey(KeyOut):
    token: str
    warning: str


class KeyList(BaseModel):
    keys: list[KeyOut]


class HealthResponse(BaseModel):
    status: str
    database: str


class StatusResponse(BaseModel):
    service: str
    version: str
    interface_version: str
    git_revision: str | None
    node_id: str
    started_at: datetime
    uptime_seconds: float
    database: str
