"""The generated-schema oracle: random tables, random values, random transactions, from a seed.

``schema`` generates a table definition (1 to 60 columns of every type the
flavour supports, in random order, with lengths, precisions and character sets
at their edges), single columns for type changes, and values for its columns
(SQL literals, edges first); ``run`` executes a seeded workload of
transactions and random DDL (column changes at random places, character set
changes, DROP/CREATE of the table, a gh-ost-style swap) on a live server,
takes ``SELECT`` images of every row before and after each transaction under
the names its table's columns have then, and compares the changes a consumer
decoded with them, keys and values. A mismatch names the seed, the server and
modes, the DDL so far, the statement and both values, and is shrunk to the
smallest failing table.
"""

from __future__ import annotations
