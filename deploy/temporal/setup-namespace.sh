#!/bin/sh
# One-shot (temporal-namespace service): creates the namespace and the order search attributes
# (workflows.SearchAttributes; deploy/compose_test.go checks this list against it). Idempotent.
set -eu

: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}"
export TEMPORAL_ADDRESS

echo "temporal-namespace: waiting for $TEMPORAL_ADDRESS"
i=0
until temporal operator cluster health >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -ge 60 ]; then
    echo "temporal-namespace: $TEMPORAL_ADDRESS is not healthy after 60 tries" >&2
    exit 1
  fi
  sleep 2
done

temporal operator namespace describe -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create -n "$TEMPORAL_NAMESPACE" --retention 72h

add_search_attribute() {
  if temporal operator search-attribute list -n "$TEMPORAL_NAMESPACE" | grep -qw "$1"; then
    return 0
  fi
  temporal operator search-attribute create -n "$TEMPORAL_NAMESPACE" --name "$1" --type "$2"
}
add_search_attribute OrderStatus Keyword
add_search_attribute OrderSKUs KeywordList
add_search_attribute PaymentDeadline Datetime
add_search_attribute StuckStep Keyword
echo "temporal-namespace: $TEMPORAL_NAMESPACE ready"
