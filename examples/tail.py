"""Tail a MariaDB primary: every row change as one JSON line, in an ``async for`` loop.

    REPLICA_CLIENT_PASSWORD=replpass python examples/tail.py mariadb://repl@127.0.0.1:3307

Options: ``--from-gtid 0-1-42`` (default: from now), ``--tables shop.*``,
``--non-blocking`` (stop at the end of the binlog), ``--server-id``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
from urllib.parse import unquote, urlsplit

import replica_client as rc
from replica_client.jsonvalues import change_envelope

__all__ = ["main", "tail"]


async def tail(args: argparse.Namespace) -> None:
    dsn = urlsplit(args.dsn)
    start: rc.Gtid | str = rc.Gtid(args.from_gtid) if args.from_gtid else "now"
    async with rc.connect(
        host=dsn.hostname or "127.0.0.1",
        port=dsn.port or 3306,
        user=unquote(dsn.username or "root"),
        password=unquote(dsn.password or os.environ.get("REPLICA_CLIENT_PASSWORD", "")),
        server_id=args.server_id,
        start=start,
        blocking=not args.non_blocking,
        tables=args.tables,
    ) as stream:
        async for change in stream.changes():
            print(json.dumps(change_envelope(change)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn", help="mariadb://user[:pass]@host:port")
    parser.add_argument("--from-gtid", default=None)
    parser.add_argument("--tables", default=None)
    parser.add_argument("--server-id", type=int, default=4343)
    parser.add_argument("--non-blocking", action="store_true")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(tail(parser.parse_args()))


if __name__ == "__main__":
    main()
