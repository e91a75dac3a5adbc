package sagatest

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	serverlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
)

// serverStarts is held while a server picks its ports and listens on them, so the parallel tests of one
// process do not hand each other the same port.
var serverStarts sync.Mutex

// NewServer starts an in-process Temporal server (temporaltest) for tb, with serverOpts added to its own, and
// stops it when tb ends. Its clients log warnings and errors to stderr.
//
// temporaltest picks the ports of its services by listening on port 0 and closing again, so another socket
// of a busy test process (an outgoing connection takes a port of the same range) can take one before the
// service listens there. temporaltest's no-op logger then swallows the fatal "Failed to start gRPC
// listener", and gRPC serving a nil listener panics in a goroutine: the whole test binary dies. Here the
// server's logger turns a Fatal during the start into a panic inside NewServer, where it is recovered and
// the server started again on fresh ports (up to five times).
func NewServer(tb testing.TB, serverOpts ...temporal.ServerOption) *temporaltest.TestServer {
	tb.Helper()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	serverStarts.Lock()
	defer serverStarts.Unlock()
	var failures []any
	for attempt := 1; attempt <= 5; attempt++ {
		fatal := &fatalDuringStart{}
		fatal.starting.Store(true)
		srv, failed := tryServer(
			temporaltest.WithBaseClientOptions(client.Options{Logger: tlog.NewStructuredLogger(logger)}),
			temporaltest.WithBaseServerOptions(append(append([]temporal.ServerOption(nil), serverOpts...), temporal.WithLogger(fatal))...),
		)
		fatal.starting.Store(false)
		if failed == nil {
			tb.Cleanup(srv.Stop)
			return srv
		}
		tb.Logf("temporal test server, attempt %d: %v (starting again on other ports)", attempt, failed)
		failures = append(failures, failed)
	}
	tb.Fatalf("temporal test server did not start in 5 attempts: %v", failures)
	return nil
}

// tryServer is temporaltest.NewServer with its panics returned.
func tryServer(opts ...temporaltest.TestServerOption) (srv *temporaltest.TestServer, failed any) {
	defer func() { failed = recover() }()
	return temporaltest.NewServer(opts...), nil
}

// fatalDuringStart is the server's logger: silent (as temporaltest's own), except that a Fatal while the server
// starts panics (see NewServer). After the start a Fatal stays silent, as it was.
type fatalDuringStart struct {
	starting atomic.Bool
}

var _ serverlog.Logger = (*fatalDuringStart)(nil)

func (*fatalDuringStart) Debug(string, ...tag.Tag)  {}
func (*fatalDuringStart) Info(string, ...tag.Tag)   {}
func (*fatalDuringStart) Warn(string, ...tag.Tag)   {}
func (*fatalDuringStart) Error(string, ...tag.Tag)  {}
func (*fatalDuringStart) DPanic(string, ...tag.Tag) {}
func (*fatalDuringStart) Panic(string, ...tag.Tag)  {}

func (l *fatalDuringStart) Fatal(msg string, tags ...tag.Tag) {
	if !l.starting.Load() {
		return
	}
	for _, t := range tags {
		msg += fmt.Sprintf(" %s=%v", t.Key(), t.Value())
	}
	panic("temporal server: " + msg)
}

func (l *fatalDuringStart) With(...tag.Tag) serverlog.Logger { return l }
