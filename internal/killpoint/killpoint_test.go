package killpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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

// TestUnsetIsInert re-executes the test binary with ORDERSAGA_KILL_AT empty (and the other variables set, so
// that only the point is missing): every point hit many times, the child must not be armed, count no hit,
// write no kill line and exit 0 after the hits.
func TestUnsetIsInert(t *testing.T) {
	if os.Getenv("KILLPOINT_CHILD") == "inert" {
		for i := range 5 {
			for _, p := range Points {
				Hit(p, "o"+strconv.Itoa(i))
			}
		}
		fmt.Printf("after-hits armed=%v hits=%d\n", armed.Load(), hits.Load())
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnsetIsInert$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KILLPOINT_CHILD=inert", EnvAt+"=", EnvAfter+"=1", EnvSpare+"=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child with no kill point: %v (stdout %q, stderr %q): an unset point must not act", err, out, stderr.String())
	}
	if !strings.Contains(string(out), "after-hits armed=false hits=0") {
		t.Errorf("child stdout %q: want it unarmed, no hit counted, past every Hit", out)
	}
	if strings.Contains(stderr.String(), KillLine) {
		t.Errorf("child stderr %q: an unset point wrote a kill line", stderr.String())
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
	if point, order, ok := ParseKillLine(stderr.String()); !ok || point != DeductAfterCommit || order != "o3" {
		t.Fatalf("child stderr %q: want a kill line naming %s and order o3, got %q, %q", stderr.String(), DeductAfterCommit, point, order)
	}
}

func TestParseKillLine(t *testing.T) {
	for _, c := range []struct {
		line, point, order string
		ok                 bool
	}{
		{KillLine + "deduct-after-commit (hit 2) order o-7", DeductAfterCommit, "o-7", true},
		{`{"level":"warn"} ` + KillLine + "compensate-middle (hit 1) order o:1\r", CompensateMiddle, "o:1", true},
		{KillLine + "deduct-after-commit (hit 2) order ", "", "", false},
		{KillLine + "deduct-after-commit (hit 2)", "", "", false},
		{"killpoint: ORDERSAGA_KILL_AT=\"x\": want one of ...", "", "", false},
		{"", "", "", false},
	} {
		point, order, ok := ParseKillLine(c.line)
		if ok != c.ok || (ok && (point != c.point || order != c.order)) {
			t.Errorf("ParseKillLine(%q) = %q, %q, %v; want %q, %q, %v", c.line, point, order, ok, c.point, c.order, c.ok)
		}
	}
}
