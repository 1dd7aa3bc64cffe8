"""PySpark data source ``mariadb_binlog``: a changelog of MariaDB row changes.

Install with the extra: ``pip install 'replica-client[spark]'`` (pyspark >= 4.2
and pyarrow). The only package of the library that imports pyspark.

Register it once per SparkSession (or rely on the automatic registration
through the top-level ``pyspark_mariadb_binlog`` module)::

    from replica_client.spark import register
    register(spark)

    # streaming from a live primary
    changes = (spark.readStream.format("mariadb_binlog")
               .option("host", "db1").option("port", 3306)
               .option("user", "repl").option("password", "...")
               .option("server_id", 4242)
               .option("startingPosition", "earliest")
               .option("maxRowsPerTrigger", 100_000)
               .load())

    # batch over binlog files (a directory, a file, a glob, or a list)
    df = spark.read.format("mariadb_binlog").load("/backups/binlogs/mysql-bin.*")

Options (names are case-insensitive; Spark lowercases them anyway):

=====================  =========================================================
host, port             the primary (stream); default 127.0.0.1:3306
hosts                  several primaries, ``h1:3306,h2:3306``: when the one
                       streamed from is lost, the next writable primary holding
                       every transaction planned so far takes over, by GTID (a
                       primary that lacks some raises LostTransactionsError)
user, password         replication account: REPLICATION SLAVE plus BINLOG MONITOR
                       (REPLICATION CLIENT) for SHOW MASTER STATUS / BINARY LOGS
server_id              replica id, unique among the primary's replicas (stream,
                       required): the driver's connection
taskServerIds          stream: the replica ids the tasks register with, one per
                       task of a micro-batch, ``first-last`` (default: the
                       ``maxPartitions`` ids after ``server_id``); unused by any
                       other replica of the primary
startingPosition       ``earliest`` (first binlog still on the primary, default),
                       ``latest`` (the binlog's end now), a MariaDB GTID state
                       ``0-1-100,1-2-7``, a MySQL GTID set ``uuid:1-100``, or
                       ``file:pos`` (``mysql-bin.000003:4``,
                       a transaction boundary), or ``snapshot``: the tables'
                       existing rows first (``op`` ``r``, primary-key ranges read
                       by tasks; see ``spark/snapshot.py``), then the stream. Only
                       for a new query: a restarted query resumes from its
                       checkpoint.
snapshotChunkRows      startingPosition=snapshot: rows per key range (50000)
tables                 only these tables: ``db.t,db2.*`` (fnmatch patterns,
                       comma-separated); rows of other tables are never decoded
excludeTables          tables to leave out, same syntax
keyFile                file_key_management key file for encrypted binlog files
                       (batch); read in the driver, the keys ship to executors
keyFilePassword        password of an encrypted key file
verifyChecksum         check every event's CRC32 (default true)
maxRowsPerTrigger      stream: at most this many rows per micro-batch. The
                       driver then decodes each transaction once more to count
                       its rows; leave it unset for the fastest stream
maxBytesPerTrigger     stream: at most this many binlog bytes per micro-batch
                       (default 67108864 = 64 MiB; 0 = no limit)
maxPartitions          stream: at most this many partitions per micro-batch
                       (default 16); each task dumps its own binlog range
partitionBytes         stream: about this many binlog bytes per partition
                       (default 4194304); a larger transaction is one task's
connectTimeout         seconds to connect and register (default 10)
readTimeout            seconds without a byte from the primary (default 60)
tls, tlsCa             ``off`` (default), ``required``, ``verify_ca``,
                       ``verify_identity``; CA file for the verifying modes
path / load(...)       batch: binlog files, directories or globs
typed                  ``true``: ``before``/``after`` as structs of the one table
                       ``tables`` names (``db.t``, no wildcards; not with
                       startingPosition=snapshot); see :mod:`.typed`
invalidValues          typed=true: a value Spark cannot hold (a zero date, text
                       invalid in its charset, ...) fails the query (``error``,
                       default) or is read as NULL (``null``)
schemaHistory          where the column names, signedness, charsets, ENUM/SET
                       labels and SQL types the binlog lacks come from
                       (``binlog_row_metadata`` NO_LOG or MINIMAL, the servers'
                       defaults). Stream: ``auto`` (default; read from the
                       primary's information_schema when a new query starts,
                       the binlog between the start and that moment read for
                       DDL where it matters), ``scan`` (that read always),
                       ``off`` (TABLE_MAPs as the binlog has them: columns
                       ``@1``, ``@2``, ... without FULL metadata), or the path of
                       a JSON file: a checkpoint's (``Checkpoint.to_json``) or a
                       schema history's (``SchemaHistory.to_json``), valid at
                       ``startingPosition``. Batch: such a file, valid at the
                       start of the first file (without one, as ``off``)
unproven               with a schema history, a TABLE_MAP it cannot vouch for
                       fails the query with SchemaHistoryError (``error``,
                       default) or is read as the binlog has it (``positional``)
=====================  =========================================================

Batches are cut only at transaction boundaries, so a transaction is never
split across micro-batches; a transaction larger than a limit forms a batch
of its own. Both limits apply together; ``Trigger.Once`` (ReadAllAvailable)
ignores them, ``Trigger.AvailableNow`` honours them and stops at the binlog end
seen when the query started.

The schema (the same for every table; see :mod:`replica_client.spark.changelog`):
``op`` (c/u/d, r for snapshot rows), ``db``, ``table``, ``before``, ``after`` (JSON strings),
``pk`` (JSON of the primary-key columns), ``gtid``, ``server_id``, ``file``,
``pos``, ``row_index``, ``commit_ts``, ``seq``. Row images are JSON text, not
VARIANT: JSON strings round-trip through every sink (parquet, Delta, Kafka) and
every Spark >= 4.2 handles them; ``parse_json(after)`` turns one into a VARIANT,
``from_json(after, "id INT, name STRING")`` into a struct.

With ``typed=true`` (:mod:`replica_client.spark.typed`) ``before`` and
``after`` are structs of the one table's columns, with Spark types (INT ->
int, BIGINT UNSIGNED -> decimal(20,0), DECIMAL(p,s) -> decimal(p,s), DATETIME
-> timestamp_ntz, TIMESTAMP -> timestamp, TIME -> interval day to second,
text/ENUM/SET/JSON -> string, binary/BLOB/GEOMETRY -> binary, ...). The schema
is the table's definition in the schema history valid where the query starts
(stream), or the table's first TABLE_MAP in the files completed by the history
given (batch); with ``schemaHistory=off`` the primary's
``information_schema.COLUMNS`` or the files' first TABLE_MAP, both needing
``binlog_row_metadata=FULL``. A value Spark cannot hold raises
:class:`~replica_client.errors.UnrepresentableValueError`, an ALTER TABLE that
changes the struct while the query runs
:class:`~replica_client.errors.SchemaChangedError`.

Schema history (:mod:`replica_client.spark.history`): the driver follows the
DDL and hands each task the history valid where its range starts. A stream's
driver reads the definitions at the query's start (``latest``: the exact
point they were read at), its dump completes every TABLE_MAP (one the history
cannot prove fails the query there, with
:class:`~replica_client.errors.SchemaHistoryError`), every offset holds the
history valid at it, and each partition the history at its range's start
(its task's decoder follows the DDL within the range).
A restarted query decodes with its checkpoint's history, never the primary's
current definitions. The history kept is that of the tables ``tables``
selects (and of those the binlog changed): without ``tables`` every table's
definition is in every offset. A batch's driver reads the files' events in
order (rows undecoded) and gives each task the history at the start of its
span.

Rows changed by a statement the primary logged as SQL text (``binlog_format``
MIXED, MariaDB's default, or STATEMENT) have no row images in the binlog: such
a statement writing a selected table fails the query with
:class:`~replica_client.errors.StatementLoggedError` (stream: in the driver;
batch: in the task reading it), never skipped. Set ``binlog_format=ROW``.

Offsets are JSON: ``{"file": ..., "pos": ..., "gtid": ..., "schema": ...}``
(the position after a transaction, the GTID state there, and the schema
history there). A restarted query re-reads the range of its last planned
batch from the primary, so the result is the same; when the primary has
purged that range the query fails with
:class:`~replica_client.errors.BinlogPositionError` instead of skipping data.

Known pitfalls (Spark 4.2 / 4.3), and what this source does about them:

* Executors run ``python3`` from PATH unless ``PYSPARK_PYTHON`` is set: set it
  to the interpreter that has replica_client installed (``register`` warns
  when it is unset).
* pyarrow is required (``read()`` yields Arrow record batches); importing this
  package without it raises ImportError naming the extra.
* The package must be importable by the workers: install it (pip) on every
  node; ``addPyFile`` is not enough for streaming, whose driver-side reader
  runs in a separate Python process.
* Option names arrive lowercased: every option is matched case-insensitively.
* ``commit(end)`` arrives one batch late and ``stop()`` may never be called:
  nothing depends on them (they only free memory and the connection).
* Without ``SupportsTriggerAvailableNow`` an availableNow trigger silently
  becomes one batch: the stream reader implements it.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

try:
    import pyarrow  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "replica_client.spark needs pyarrow: pip install 'replica-client[spark]'"
    ) from exc

from .changelog import FIELDS, sequence
from .options import SourceOptions, parse_options
from .source import (
    CHANGELOG_SCHEMA,
    BinlogBatchReader,
    BinlogStreamReader,
    MariaDBBinlogDataSource,
    changelog_schema,
)

__all__ = [
    "CHANGELOG_SCHEMA",
    "FIELDS",
    "BinlogBatchReader",
    "BinlogStreamReader",
    "MariaDBBinlogDataSource",
    "SourceOptions",
    "changelog_schema",
    "parse_options",
    "register",
    "sequence",
]


def register(spark: Any) -> None:
    """Register the ``mariadb_binlog`` format with a SparkSession."""
    if not os.environ.get("PYSPARK_PYTHON"):
        warnings.warn(
            "PYSPARK_PYTHON is not set: Spark's Python workers run 'python3' from PATH, "
            "which must have replica_client installed",
            RuntimeWarning,
            stacklevel=2,
        )
    spark.dataSource.register(MariaDBBinlogDataSource)
