"""A `GatewayConfig` for a gateway run in the test's own process (`Gateway.run` on its loop)."""

from __future__ import annotations

from typing import Any

from groundwire.gateway import GatewayConfig, load_config


def gateway_config(forward: str, **flags: Any) -> GatewayConfig:
    """Forwarding to `forward` from a free loopback port with one sender; `flags` on top."""
    settings = {"forward": forward, "listen": "127.0.0.1:0", "senders": 1, **flags}
    return load_config(flags=settings, environ={})
