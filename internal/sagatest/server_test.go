package sagatest

import (
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// TestFatalDuringStartPanicsOnlyWhileStarting: the server's fatal "Failed to start gRPC listener" while it
// starts becomes a panic that NewServer recovers (and starts again); after the start a Fatal stays silent, as
// temporaltest's own logger keeps it.
func TestFatalDuringStartPanicsOnlyWhileStarting(t *testing.T) {
	l := &fatalDuringStart{}
	l.starting.Store(true)
	failed := func() (p any) {
		defer func() { p = recover() }()
		l.With(tag.Service("matching")).Fatal("Failed to start gRPC listener", tag.Address("127.0.0.1:1"))
		return nil
	}()
	if msg, _ := failed.(string); !strings.Contains(msg, "Failed to start gRPC listener") || !strings.Contains(msg, "127.0.0.1:1") {
		t.Fatalf("a Fatal while starting: recovered %v, want a panic naming the message and the address", failed)
	}
	l.starting.Store(false)
	l.Fatal("Failed to serve on matching listener") // must not panic
}
