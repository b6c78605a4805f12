"""The sign-in form's slow-down says how long to wait, in the page and in `Retry-After`
(#33, item 9).

Before: the API's 429 carried `Retry-After` and the form's did not, so the owner signing in
through the form after an attacker's failures learnt the wait only from the sentence. The
forms' 429s (sign-in, sign-up, forgotten password) now carry the header with the wait the
sentence states.
"""

from __future__ import annotations

from tests.conftest import unique_email
from tests.web.conftest import PASSWORD, StartWeb, start_web  # noqa: F401
from tests.web.test_pages import submit


async def test_the_sign_in_forms_429_says_how_long(start_web: StartWeb) -> None:  # noqa: F811
    service = await start_web(login_failures_per_account=2)
    email = unique_email("waiting")
    async with service.client() as client:
        await client.post("/api/auth/register", json={"email": email, "password": PASSWORD})
        for _ in range(2):
            wrong = await submit(client, "/login", {"email": email, "password": "not it at all"})
            assert wrong.status_code == 401
        waiting = await submit(client, "/login", {"email": email, "password": PASSWORD})
        assert waiting.status_code == 429
        seconds = int(waiting.headers["Retry-After"])  # the pair's window: 15 minutes
        assert 840 < seconds <= 900, seconds
        assert f"Try again in {(seconds + 59) // 60} minutes." in waiting.text

        for _ in range(5):
            asked = await submit(client, "/forgot-password", {"email": email})
            assert asked.status_code == 303  # to the page saying what happens next
        too_many = await submit(client, "/forgot-password", {"email": email})
        assert too_many.status_code == 429
        assert int(too_many.headers["Retry-After"]) > 0
