#!/usr/bin/env bash
# Runs each fuzz target of the request decoders and the webhook signature parser for FUZZTIME (default 10m)
# and prints its figures (execs, new interesting inputs). `go test` runs their seed corpora on every run; a
# crasher found here is written under the package's testdata/fuzz/ and becomes a seed to commit.
# Usage: scripts/fuzz.sh   (FUZZTIME=10m, FUZZPARALLEL=<GOMAXPROCS>, ONLY="FuzzVerify ...")
set -euo pipefail
cd "$(dirname "$0")/.."
time="${FUZZTIME:-10m}"
par=()
[ -n "${FUZZPARALLEL:-}" ] && par=(-parallel "$FUZZPARALLEL")
targets=("FuzzOrderRequest ./internal/api" "FuzzPaymentEvent ./internal/api" "FuzzVerify ./internal/webhook")
for t in "${targets[@]}"; do
  set -- $t
  name=$1 pkg=$2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  echo "=== $name ($pkg) for $time"
  go test -run '^$' -fuzz "^$name\$" -fuzztime "$time" "${par[@]}" "$pkg" 2>&1 | tail -n 4
done
