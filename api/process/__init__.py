"""Process start-up: the `nichescope` command (`cli`), `serve` (HTTP and the engine), `worker`
(the engine alone), `node` (what every node runs) and the `--demo` account. It imports the app
and the engine; nothing else in `api/` imports it.
"""
