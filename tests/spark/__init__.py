"""Tests of the PySpark data source (local SparkSession, private MariaDB primary)."""
