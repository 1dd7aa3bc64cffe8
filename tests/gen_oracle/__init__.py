"""The generated-schema oracle: random tables, random values, random transactions, from a seed.

``schema`` generates a table definition (1 to 60 columns of every type the
flavour supports, in random order, with lengths, precisions and character sets
at their edges) and values for its columns (SQL literals, edges first);
``run`` executes a seeded workload of transactions on a live server, takes
``SELECT`` images of every row before and after each transaction, decodes the
binlog (files and the network) and compares every decoded value with the
server's own text form of the same row. A mismatch names the seed, the DDL,
the statement and both values, and is shrunk to the smallest failing table.
"""

from __future__ import annotations
