"""Decode binlog files (a file, several, or a directory) into row changes.

    python examples/read_files.py /var/lib/mysql/mysql-bin.000042
    python examples/read_files.py /var/lib/mysql --tables shop.orders

Prints one line per row change: operation, table, GTID, position and the row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import replica_client as rc
from replica_client.jsonvalues import json_row

__all__ = ["main"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--tables", default=None, help="only these tables: db.t,db2.*")
    parser.add_argument("--key-file", default=None, help="key file of encrypted binlogs")
    args = parser.parse_args()
    source = args.paths[0] if len(args.paths) == 1 else args.paths
    with rc.open_binlog(source, tables=args.tables, key_file=args.key_file) as events:
        for change in rc.iter_changes(events):
            row = change.after if change.op != "delete" else change.before
            print(
                f"{change.op:<6} {change.schema}.{change.table} gtid={change.gtid} "
                f"at={change.position} row={json.dumps(json_row(row))}"
            )


if __name__ == "__main__":
    main()
