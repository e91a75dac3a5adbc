package sagatest

import (
	"context"
	"time"

	"github.com/ordersaga/ordersaga/internal/orderclient"
)

// UntilDecided calls f (an orderclient call) again while its error says the workflow may still be deciding
// (orderclient.Undecided: a wait that ended first, or Temporal asking to back off), as the order API's retry
// with the same key does: the same request attaches to the same workflow. It stops when ctx ends.
func UntilDecided[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !orderclient.Undecided(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
