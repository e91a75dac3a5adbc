#!/bin/sh
# One-shot (temporal-namespace service): creates the namespace and the order search attributes
# (workflows.SearchAttributes). It first waits until the frontend answers an RPC (the temporal service's
# health check only proves the port is open), then retries each step until it succeeds or is found done,
# all within TEMPORAL_SETUP_TIMEOUT seconds: the worker and the starter wait for this container's first exit,
# so a step that failed once on a slow host must not end it. Idempotent. deploy/compose_temporal_test.go
# runs it against a fake CLI.
set -eu

: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}"
export TEMPORAL_ADDRESS
timeout=${TEMPORAL_SETUP_TIMEOUT:-300}
pause=${TEMPORAL_SETUP_RETRY_SECONDS:-2}
deadline=$(($(date +%s) + timeout))

# op runs one CLI call, bounded: a frontend that takes the connection and never answers must not hold a try.
op() { temporal operator "$@" --command-timeout 10s; }

# until_done WHAT CHECK [ACTION]: until the command line CHECK succeeds, runs ACTION (if any; done when it
# succeeds) and pauses. Gives up, naming WHAT, at the deadline.
until_done() {
  while ! eval "$2"; do
    if [ -n "${3:-}" ] && eval "$3"; then
      break
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "temporal-namespace: gave up after ${timeout}s: $1" >&2
      exit 1
    fi
    sleep "$pause"
  done
  echo "temporal-namespace: $1: done"
}

until_done "the frontend at $TEMPORAL_ADDRESS answering" 'op cluster health >/dev/null'
until_done "namespace $TEMPORAL_NAMESPACE" \
  'op namespace describe -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1' \
  'op namespace create -n "$TEMPORAL_NAMESPACE" --retention 72h'

has_search_attribute() {
  op search-attribute list -n "$TEMPORAL_NAMESPACE" 2>/dev/null | grep -qw "$1"
}
add_search_attribute() {
  until_done "search attribute $1 ($2)" "has_search_attribute $1" \
    "op search-attribute create -n \"\$TEMPORAL_NAMESPACE\" --name $1 --type $2"
}
add_search_attribute OrderStatus Keyword
add_search_attribute OrderSKUs KeywordList
add_search_attribute PaymentDeadline Datetime
add_search_attribute StuckStep Keyword
echo "temporal-namespace: $TEMPORAL_NAMESPACE ready"
