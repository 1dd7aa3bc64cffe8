"""Binlog format decoding. No I/O: bytes in, events out.

Shared by the network stream and the file reader. Never imports ``wire/``.
"""

from __future__ import annotations

__all__: list[str] = []
