"""The Content-Security-Policy of the service's HTML (the web pages and `/docs`).

One policy with two knobs, so that both kinds of page keep the same baseline: scripts, images
and connections from this origin only, never framed, no `<base>` and no plugins.
"""

from __future__ import annotations


def content_security_policy(style_src: str, *extra: str) -> str:
    """The policy with styles from `style_src` and `extra` directives (before the framing
    and plugin ones, in the order given)."""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            f"style-src {style_src}",
            "img-src 'self' data:",
            "connect-src 'self'",
            *extra,
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "object-src 'none'",
        ]
    )
