"""HTTP plumbing every resource shares: the error envelope, body limits and the strict-JSON
request, who is calling (sessions and tokens), rate limits, CSRF for cookie writes, OpenAPI
and `/docs`, and the bodies every resource uses (`schemas`).
"""
