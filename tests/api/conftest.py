"""Fixtures for the API tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.api.helpers import signed_in
from tests.conftest import RunningService, ServiceClient


@pytest.fixture
async def client(service: RunningService) -> AsyncIterator[ServiceClient]:
    """A client of `service`, signed in to an account of its own, on its free trial."""
    async with service.client() as signed:
        await signed_in(signed)
        yield signed
