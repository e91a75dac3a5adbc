package placement

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
)

// TestOrderIDsSortByTime: the order IDs of keys first used later sort later, whatever the users, keys and
// generations, down to the millisecond (the indexes on order_id grow at their end); IDs of one millisecond
// differ; every ID is a valid order ID.
func TestOrderIDsSortByTime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)
	var before, this string // the largest IDs of the millisecond before and of this one
	seen := map[string]bool{}
	for i := range 2000 {
		at := start.Add(time.Duration(i/4) * time.Millisecond) // four keys per millisecond
		if i%4 == 0 {
			before, this = this, ""
		}
		nonce := newNonceAt(at)
		if len(nonce) != 32 || nonce[0] != 't' {
			t.Fatalf("nonce %q: want t and 31 hex characters", nonce)
		}
		id := OrderID(fmt.Sprintf("user-%d", 1999-i), fmt.Sprintf("key-%d", i%7), nonce, int64(i%3))
		if !ordersaga.ValidOrderID(id) || len(id) != 38 {
			t.Fatalf("order ID %q: want o- and 36 hex characters, a valid order ID", id)
		}
		if seen[id] {
			t.Fatalf("order ID %q made twice", id)
		}
		seen[id] = true
		if id <= before {
			t.Fatalf("order ID %q of %v sorts before %q of the millisecond before", id, at, before)
		}
		this = max(this, id)
	}
}

// The order ID, the marker name and the fingerprint are stored (idempotency_keys, orders, workflow IDs, Redis
// markers): a change of one would make every key already used a new order, or a reused key. Pinned; a row
// without a nonce (from before migration 0005) keeps the legacy derivation.
func TestOrderIDAndFingerprintAreStable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		user, key, nonce string
		generation       int64
		want             string
	}{
		{"u-1", "k-reserved", "", 0, "o-170f2161189a7b738ef35ef1"},
		{"u-1", "k-reserved", "", 1, "o-51cd2945fa2189a2492f30a7"},
		{"user.A_9", "key:with.all-chars_", "", 7, "o-a4437a72d676ea8da880c915"},
		{"u-1", "k-reserved", "0123456789abcdef0123456789abcdef", 0, "o-cf01b6fa7b40b28d24ef8124"},
		{"u-1", "k-reserved", "t0190a1b2c3d40123456789abcdef012", 0, "o-0190a1b2c3d4f338c425d153e49ee78b7267"},
		{"u-1", "k-reserved", "t0190a1b2c3d40123456789abcdef012", 1, "o-0190a1b2c3d46ccd88ee5878e02b9942a0c9"},
	} {
		if got := OrderID(c.user, c.key, c.nonce, c.generation); got != c.want {
			t.Errorf("OrderID(%q, %q, %q, %d) = %s, want %s", c.user, c.key, c.nonce, c.generation, got, c.want)
		}
	}
	if got, want := MarkerName("u-1", "k-reserved"), "k-"; !strings.HasPrefix(got, want) || len(got) != 34 {
		t.Errorf("MarkerName = %s, want k- and 32 hex characters", got)
	}
	if a, b := NewNonce(), NewNonce(); a == b || len(a) != 32 || len(b) != 32 || a[0] != 't' {
		t.Errorf("two nonces %s and %s: want distinct, 32 characters, timed", a, b)
	}
	const want = "6833c7aec21962375e5fd2317436ae0fd28e184c08cf1225e90f8cc4f65f3d7a"
	for _, lines := range [][]ordersaga.Line{
		{{SKU: "SKU-1", Qty: 2}, {SKU: "SKU-2", Qty: 1}},
		{{SKU: "SKU-2", Qty: 1}, {SKU: "SKU-1", Qty: 2, UnitPriceCents: 5}}, // the order and prices do not count
	} {
		r := Request{UserID: "u-1", Key: "k", Lines: lines}.canonical()
		if got := r.fingerprint(); got != want {
			t.Errorf("fingerprint of %v = %s, want %s", lines, got, want)
		}
		if r.Lines[0].SKU != "SKU-1" || r.Lines[0].UnitPriceCents != 0 {
			t.Errorf("canonical lines %v: want SKU order, SKU and qty only", r.Lines)
		}
	}
}

// A request that breaks the rulebook is refused before anything is read or written (this service has no
// stores at all).
func TestPlace_InvalidRequestTouchesNothing(t *testing.T) {
	svc := New(Config{KeepAs: func(ordersaga.Order) Answer { return Answer{} }})
	line := []ordersaga.Line{{SKU: "SKU-1", Qty: 1}}
	for _, c := range []struct {
		name string
		req  Request
	}{
		{"no_key", Request{UserID: "u", Lines: line}},
		{"key_with_a_slash", Request{UserID: "u", Key: "a/b", Lines: line}},
		{"key_of_256_chars", Request{UserID: "u", Key: strings.Repeat("k", 256), Lines: line}},
		{"no_user", Request{Key: "k", Lines: line}},
		{"no_lines", Request{UserID: "u", Key: "k"}},
		{"qty_0", Request{UserID: "u", Key: "k", Lines: []ordersaga.Line{{SKU: "SKU-1"}}}},
		{"duplicate_sku", Request{UserID: "u", Key: "k", Lines: append(line, line...)}},
	} {
		if _, err := svc.Place(context.Background(), c.req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: Place = %v, want ErrInvalidRequest", c.name, err)
		}
	}
}
