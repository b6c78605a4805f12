"""Bodies of the account, session and access-token endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from api.billing.schemas import BillingSummary
from api.http.email_address import Email
from api.http.schemas import Strict
from api.http.security import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH

Password = Field(min_length=MIN_PASSWORD_LENGTH, max_length=MAX_PASSWORD_LENGTH)


class RegisterRequest(Strict):
    email: Email
    password: str = Password
    name: str | None = Field(default=None, max_length=200)


class LoginRequest(Strict):
    email: Email
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_LENGTH)


class ForgotPasswordRequest(Strict):
    email: Email


class ResetPasswordRequest(Strict):
    token: str = Field(min_length=1, max_length=200)
    password: str = Password
    revoke_tokens: bool = Field(
        default=True,
        description="Also revoke every personal access token of the account (a stolen "
        "account's tokens would otherwise keep working); the reset e-mail lists them.",
    )


# `security.new_secret()`: 32 random bytes, URL-safe base64 without padding.
LINK_TOKEN_PATTERN = "^[A-Za-z0-9_-]{43}$"


class ConfirmEmailRequest(Strict):
    token: str = Field(
        pattern=LINK_TOKEN_PATTERN,
        description="The `token` parameter of the confirmation link mailed to the address.",
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
    email_verified: bool = Field(
        description="Whether the owner proved the address (a link mailed to it, or the "
        "identity provider). Until then it links no identity provider's sign-in and makes "
        "no operator; `POST /api/auth/confirm-email/resend` mails a new link."
    )
    email_verified_at: datetime | None = None


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
