package devserver

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// A fatal error of the in-process Temporal server ends the process with status 1 and says why on stderr,
// even when the logger it was given discards everything.
func TestFatalSaysWhyOnStderr(t *testing.T) {
	if os.Getenv("DEVSERVER_FATAL_CHILD") == "1" {
		newServerLogger(slog.New(slog.DiscardHandler)).Fatal("listen tcp 127.0.0.1:7233: bind: address already in use",
			tag.NewStringTag("service", "frontend"))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFatalSaysWhyOnStderr$")
	cmd.Env = append(os.Environ(), "DEVSERVER_FATAL_CHILD=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child ended with %v, want exit status 1", err)
	}
	if got := stderr.String(); !strings.Contains(got, "temporal server: fatal: listen tcp 127.0.0.1:7233: bind: address already in use") ||
		!strings.Contains(got, "frontend") {
		t.Errorf("stderr = %q, want the fatal message and its tags", got)
	}
}
