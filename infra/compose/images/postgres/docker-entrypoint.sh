#!/bin/bash
# The official image's start-up, reduced to what the compose files use.
set -euo pipefail
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set (as for the official image)}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  initdb --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" > /dev/null
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start > /dev/null
  if [ "$db" != postgres ]; then psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -c "CREATE DATABASE \"$db\"" > /dev/null; fi
  pg_ctl -D "$PGDATA" -m fast -w stop > /dev/null
  echo "database initialised: $db"
fi
if [ "${1:-}" = postgres ]; then shift; exec postgres -c listen_addresses='*' "$@"; fi
exec "$@"
