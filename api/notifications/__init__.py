"""Notifications for people: channels (e-mail, webhooks, Telegram, Discord), the rules that
decide which alerts go where, test sends and the delivery log.

`actions` holds the use cases; `rest` the `/api/notifications/*` views; `webhook_docs` the
OpenAPI `webhooks` (the events a webhook channel receives). Pages live in `api/web`, MCP tools
in `api/mcp/tools`.
"""
