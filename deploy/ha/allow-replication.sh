#!/bin/sh
# Run once by the postgres image when it initialises a fresh data directory
# (docker-entrypoint-initdb.d): lets the compose HA profile's standby
# (postgres-standby) stream from this server, as the ticketd superuser with
# its password. Without the profile nothing ever connects this way.
set -eu
echo "host replication ticketd all scram-sha-256" >> "$PGDATA/pg_hba.conf"
