"""What the binlog does not say about a table, and where it comes from. No I/O.

- :mod:`.provided`: names and SQL data types given by a schema provider, applied
  to a TABLE_MAP (``schema_provider=`` of a stream, ``column_names=`` of files);
- :mod:`.model`: table definitions (:class:`TableDef`, :class:`ColumnDef`).
"""

from __future__ import annotations

from .model import ColumnDef, TableDef
from .provided import (
    ColumnSchema,
    ProvidedColumns,
    apply_schema,
    converter_for,
    needs_schema,
    retype_rows,
)

__all__ = [
    "ColumnDef",
    "ColumnSchema",
    "ProvidedColumns",
    "TableDef",
    "apply_schema",
    "converter_for",
    "needs_schema",
    "retype_rows",
]
