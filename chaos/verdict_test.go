package main

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ordersaga/ordersaga"
)

// TestRefusedWithOrder: a key answered 409 counts when the database holds its order with units taken
// (awaiting payment, paid, cancelled, expired, still reserving), not when it has no row, no order, or the
// order REJECTED (its reservation refused after the key was claimed: that 409 is its answer).
func TestRefusedWithOrder(t *testing.T) {
	t.Parallel()
	orders := map[string]ordersaga.Status{
		"k-none":     "",
		"k-rejected": ordersaga.StatusRejected,
		"k-awaiting": ordersaga.StatusAwaitingPayment,
		"k-paid":     ordersaga.StatusPaid,
		"k-expired":  ordersaga.StatusExpired,
	}
	refused := map[string]string{}
	for key := range orders {
		refused[key] = "u-1"
	}
	orderOf := func(_ context.Context, user, key string) (ordersaga.Status, string, error) {
		if user != "u-1" {
			t.Errorf("asked for the key %s of user %q, want u-1", key, user)
		}
		return orders[key], "o-" + key, nil
	}
	n, err := refusedWithOrder(context.Background(), refused, orderOf, io.Discard)
	if err != nil || n != 3 {
		t.Errorf("refusedWithOrder = %d, %v; want 3 (awaiting, paid, expired)", n, err)
	}
	failing := func(context.Context, string, string) (ordersaga.Status, string, error) {
		return "", "", errors.New("database down")
	}
	if _, err := refusedWithOrder(context.Background(), refused, failing, io.Discard); err == nil {
		t.Error("a failed lookup: no error, the counter would pass unchecked")
	}
}
