#!/bin/sh
# One-shot (temporal-schema service): creates or upgrades Temporal's tables in MySQL 8. Safe to run on every
# `docker compose up`: setup-schema -v 0.0 only initialises version tracking, update-schema applies what is new.
set -eu

: "${MYSQL_SEEDS:?}" "${MYSQL_USER:?}" "${MYSQL_PWD:?}"
sql() { temporal-sql-tool --plugin mysql8 --ep "$MYSQL_SEEDS" -p 3306 -u "$MYSQL_USER" --pw "$MYSQL_PWD" "$@"; }

for db in temporal visibility; do
  name=temporal
  [ "$db" = visibility ] && name=temporal_visibility
  echo "temporal-schema: $name"
  sql --db "$name" setup-schema -v 0.0
  sql --db "$name" update-schema -d "/etc/temporal/schema/mysql/v8/$db/versioned"
done
echo "temporal-schema: done"
