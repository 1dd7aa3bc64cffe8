"""Automatic registration of the ``mariadb_binlog`` Spark data source.

Spark (4.0+) imports every top-level module named ``pyspark_*`` when a session
first looks up a Python data source, and registers its ``DefaultSource``. With
replica_client installed (extra ``[spark]``), ``spark.read.format("mariadb_binlog")``
works without calling ``replica_client.spark.register`` first.
"""

from __future__ import annotations

from replica_client.spark.source import MariaDBBinlogDataSource as DefaultSource

__all__ = ["DefaultSource"]
