package killpoint

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		at, after string
		want      Config
		wantErr   string
	}{
		{"", "", Config{}, ""},
		{"", "7", Config{}, ""},
		{DeductAfterCommit, "", Config{Point: DeductAfterCommit, After: 1}, ""},
		{" " + ReserveAfterScript + " ", "3", Config{Point: ReserveAfterScript, After: 3}, ""},
		{CompensateMiddle, "1", Config{Point: CompensateMiddle, After: 1}, ""},
		{"deduct", "", Config{}, EnvAt},
		{DeductAfterCommit, "0", Config{}, EnvAfter},
		{DeductAfterCommit, "x", Config{}, EnvAfter},
		{DeductAfterCommit, "-2", Config{}, EnvAfter},
	} {
		got, err := Parse(c.at, c.after)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Parse(%q, %q) error = %v, want one naming %s", c.at, c.after, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", c.at, c.after, got, err, c.want)
		}
	}
}

// TestUnsetIsInert: this test process has no kill point, so every Hit returns.
func TestUnsetIsInert(t *testing.T) {
	if armed.Load() {
		t.Skip("a kill point is set in this process's environment")
	}
	for _, p := range Points {
		Hit(p, "o1")
	}
}

// TestKillsAtTheNthHit re-executes the test binary with a kill point at its second hit: the child must die by
// SIGKILL after the first hit returned and before the second returned.
func TestKillsAtTheNthHit(t *testing.T) {
	if os.Getenv("KILLPOINT_CHILD") == "1" {
		Hit(ReserveAfterScript, "o1") // another point: ignored
		Hit(DeductAfterCommit, "o1")
		os.Stdout.WriteString("after-hit-1\n")
		Hit(DeductAfterCommit, "o2") // spared: not counted
		os.Stdout.WriteString("after-spared\n")
		Hit(DeductAfterCommit, "o3")
		os.Stdout.WriteString("after-hit-2\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillsAtTheNthHit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KILLPOINT_CHILD=1", EnvAt+"="+DeductAfterCommit, EnvAfter+"=2", EnvSpare+"=o0, o2")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: want it killed, got err %v, output %q", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL (output %q)", ee, out)
	}
	if !strings.Contains(string(out), "after-spared") || strings.Contains(string(out), "after-hit-2") {
		t.Fatalf("child output %q: want it killed at the second hit, not the first, the spared order not counted", out)
	}
	if order, ok := KilledOrder(stderr.String()); !ok || order != "o3" {
		t.Fatalf("child stderr %q: want a kill line naming order o3, got %q", stderr.String(), order)
	}
}
