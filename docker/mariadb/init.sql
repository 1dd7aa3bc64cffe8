-- A replication user for replica_client (REPLICATION SLAVE to stream,
-- BINLOG MONITOR / REPLICATION CLIENT for positions, SELECT for column names).
CREATE USER IF NOT EXISTS 'repl'@'%' IDENTIFIED BY 'replpass';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, SELECT ON *.* TO 'repl'@'%';
