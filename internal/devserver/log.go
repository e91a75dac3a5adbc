package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// slogLogger bridges the Temporal server's logger to slog. The server is chatty at info level, so the
// local stack passes a logger at warn unless LOG_LEVEL=debug.
type slogLogger struct {
	log *slog.Logger
	// quiet drops everything below error: set while the server stops, when every service warns about the
	// connections the others just closed.
	quiet *atomic.Bool
}

var _ tlog.Logger = slogLogger{}
var _ tlog.WithLogger = slogLogger{}

func newServerLogger(l *slog.Logger) slogLogger {
	return slogLogger{log: l, quiet: new(atomic.Bool)}
}

func attrs(tags []tag.Tag) []any {
	out := make([]any, 0, len(tags))
	for _, t := range tags {
		v := t.Value()
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if s, ok := v.(fmt.Stringer); ok {
			v = s.String()
		}
		out = append(out, slog.Any(t.Key(), v))
	}
	return out
}

func (l slogLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if (level < slog.LevelError && l.quiet.Load()) || !l.log.Enabled(ctx, level) {
		return
	}
	l.log.Log(ctx, level, msg, attrs(tags)...)
}

func (l slogLogger) Debug(msg string, tags ...tag.Tag)  { l.emit(slog.LevelDebug, msg, tags) }
func (l slogLogger) Info(msg string, tags ...tag.Tag)   { l.emit(slog.LevelInfo, msg, tags) }
func (l slogLogger) Warn(msg string, tags ...tag.Tag)   { l.emit(slog.LevelWarn, msg, tags) }
func (l slogLogger) Error(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l slogLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// Panic and Fatal keep the contract of the server's own logger: the server relies on them not returning.
func (l slogLogger) Panic(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	panic(msg)
}

// Fatal also says why on stderr: the logger may discard or buffer what it is given (a test's, or a quiet
// one), and a process must never exit silently (a local-stack test once ended "exit status 1" with no line).
func (l slogLogger) Fatal(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	fmt.Fprintf(os.Stderr, "temporal server: fatal: %s %v\n", msg, attrs(tags))
	os.Exit(1)
}

func (l slogLogger) With(tags ...tag.Tag) tlog.Logger {
	return slogLogger{log: l.log.With(attrs(tags)...), quiet: l.quiet}
}
