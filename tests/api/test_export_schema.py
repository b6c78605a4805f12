"""The export's JSON Schema as the service serves it: the models' own, standalone and in the
OpenAPI document (the import's body), and what a real export satisfies."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from engine.analysis.export_format import DOCUMENT_KEYS, MonitorExport, export_json_schema
from tests.conftest import ServiceClient
from tests.engine.fake_market import FakeMarket
from tests.hardening.test_unstorable_text import _export

COMPONENTS = "#/components/schemas/{model}"


async def test_the_served_export_schema_is_the_models_and_a_real_export_meets_it(
    client: ServiceClient, market: FakeMarket
) -> None:
    export = await _export(client, market)
    served = (await client.get("/api/monitoring/export-schema")).json()
    openapi = (await client.get("/openapi.json")).json()
    assert export["listings"] and export["events"] and export["polls"]
    assert tuple(export) == DOCUMENT_KEYS  # written in the order the reader relies on

    # Standalone: one draft 2020-12 document, generated from the models the import uses.
    Draft202012Validator.check_schema(served)
    assert served == export_json_schema()
    Draft202012Validator(served).validate(export)
    MonitorExport.model_validate(export)

    # In the OpenAPI document: `MonitorExport` and its parts as components, the same schema.
    generated = export_json_schema(ref_template=COMPONENTS)
    parts: dict[str, Any] = generated.pop("$defs")
    del generated["$schema"]
    components = openapi["components"]["schemas"]
    assert components["MonitorExport"] == generated
    assert {name: components[name] for name in parts} == parts
    operation = openapi["paths"]["/api/analysis/import-monitoring"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/MonitorExport"}
    Draft202012Validator({**body, "components": openapi["components"]}).validate(export)
