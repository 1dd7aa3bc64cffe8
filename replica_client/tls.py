"""TLS modes shared by every driver (asyncio stream, Spark's blocking dump).

Driver layer: imports ``ssl``; the sans-I/O core never does.
"""

from __future__ import annotations

import ssl
from typing import Literal

__all__ = ["TLS_MODES", "TlsMode", "client_ssl_context"]

#: "off"; "required" (encrypt, do not verify); "verify_ca" (check the chain
#: against the CA file); "verify_identity" (chain and host name).
TlsMode = Literal["off", "required", "verify_ca", "verify_identity"]
TLS_MODES: tuple[TlsMode, ...] = ("off", "required", "verify_ca", "verify_identity")


def client_ssl_context(mode: TlsMode, cafile: str | None = None) -> ssl.SSLContext | None:
    """The client SSLContext for ``mode`` (None for "off")."""
    if mode == "off":
        return None
    ctx = ssl.create_default_context(cafile=cafile)
    if mode == "required":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif mode == "verify_ca":
        ctx.check_hostname = False
    return ctx
