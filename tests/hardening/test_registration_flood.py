"""Registering a taken e-mail cannot flood its owner's mailbox (#21, item 7).

Before: 25 notices in 10 s from one address, each attempt also costing an argon2 hash.
Registration is now limited per client address and per target e-mail (429 with Retry-After,
checked before hashing), and the owner gets at most one notice per window, whatever is tried.
"""

from __future__ import annotations

from tests.conftest import RunningService

NOTICE = "Someone tried to register with your e-mail"


async def test_a_taken_email_notifies_its_owner_once_and_floods_are_refused(
    service: RunningService,
) -> None:
    email = "owner@example.com"
    body = {"email": email, "password": "correct horse battery"}
    async with service.client() as client:
        first = await client.post("/api/auth/register", json=body)
        assert first.status_code == 201, first.text
        answers = [
            (await client.post("/api/auth/register", json=body)).status_code for _ in range(8)
        ]
        # The same answer as for a free e-mail while allowed (no enumeration), then 429.
        assert answers[:4] == [201] * 4 and set(answers[4:]) == {429}, answers
        refused = await client.post("/api/auth/register", json=body)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
        # Another e-mail from the same address is still welcome (the address has room).
        other = await client.post(
            "/api/auth/register", json={**body, "email": "someone.else@example.com"}
        )
        assert other.status_code == 201, other.text
    notices = await service.mails(NOTICE, f"To: {email}")
    assert len(notices) == 1, len(notices)
