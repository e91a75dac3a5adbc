#!/usr/bin/env bash
# Runs every benchmark pair of ordersaga (HTTP sold-out path, Lua reserve, orders end to end, DB deduct, accepted
# orders during a sold-out flood) in one process and prints one table: each layer against its limit, with the
# ratio. Not part of `go test ./...`.
#   scripts/bench.sh                      # all pairs, real Redis and MariaDB of this machine
#   scripts/bench.sh -only redis,db       # some layers
#   scripts/bench.sh -profile /tmp/prof   # also CPU profiles of the real sides (go tool pprof -top …)
#   scripts/bench.sh -only redis          # the Lua reserve (2a, 2b), and a hot SKU's reserve with its stock in 8
#                                         # shards against 1 (2f, "hot SKU, 1 vs 8 shards", redisstock ReserveIn)
#   scripts/bench.sh -only redis -redis-cluster   # also the sold-out check and the Lua reserve on a Redis Cluster
#                                         # (3 masters, 3 replicas started for the run) against one Redis, and the
#                                         # hot SKU in 8 shards against 1 on the cluster (2g: the shards spread
#                                         # over the 3 masters); -redis-cluster-addrs a:p,b:p uses a running
#                                         # cluster instead
#   scripts/bench.sh -only flood          # pair 5: flashsale --flood-pair against the local stack (about 2 minutes)
#   scripts/bench.sh -markdown            # BENCHMARKS.md's table on stdout (machine, commit, date, command per row),
#                                         # the text table on stderr
# REDIS_ADDR and MYSQL_DSN override 127.0.0.1:6379 and root@tcp(127.0.0.1:3306)/test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (numbers are only worth comparing when it is low)" >&2
exec go run ./bench "$@"
