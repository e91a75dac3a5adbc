// Package models holds the spin model of the reservation protocol (reservation.pml, README.md).
package models

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScriptsMatchModel fails when a Lua script changes without the model being looked at.
func TestScriptsMatchModel(t *testing.T) {
	raw, err := os.ReadFile("scripts.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("scripts.sha256: bad line %q", line)
		}
		want[f[1]] = f[0]
	}
	scripts, _ := filepath.Glob("../internal/*/lua/*.lua")
	if len(scripts) == 0 {
		t.Fatal("no scripts under ../internal/*/lua")
	}
	for _, p := range scripts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		name := strings.TrimPrefix(filepath.ToSlash(p), "../")
		if got := hex.EncodeToString(sum[:]); want[name] != got {
			t.Errorf("%s changed (sha256 %s, models/scripts.sha256 has %q): review models/reservation.pml "+
				"against it, run the model check, then update the checksum file: "+
				"(cd models && sha256sum ../internal/*/lua/*.lua | sed 's#\\.\\./##' > scripts.sha256)", name, got, want[name])
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("%s is in models/scripts.sha256 but gone: review the model and update the checksum file", name)
	}
}

// TestModel runs spin on the model: the correct model must verify, each broken variant must fail.
func TestModel(t *testing.T) {
	for _, tool := range []string{"spin", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("ORDERSAGA_REQUIRE_SPIN") == "1" {
				t.Fatalf("%s not on PATH and ORDERSAGA_REQUIRE_SPIN=1 (apt-get install -y spin)", tool)
			}
			t.Skipf("%s not on PATH: model check skipped (apt-get install -y spin; CI sets ORDERSAGA_REQUIRE_SPIN=1)", tool)
		}
	}
	model, err := filepath.Abs("reservation.pml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		flags []string
		fail  bool
	}{
		{"correct", []string{"-DGONE"}, false},
		{"stock_before_marker", []string{"-DGONE", "-DBUG_STOCK_FIRST"}, true},
		{"no_marker_check", []string{"-DGONE", "-DBUG_NO_MARKER_CHECK"}, true},
		{"release_without_tombstone", []string{"-DGONE", "-DBUG_NO_TOMBSTONE"}, true},
		{"restore_without_tombstone", []string{"-DGONE", "-DBUG_RESTORE_NO_TOMBSTONE"}, true},
		{"deduct_ignores_restore", []string{"-DGONE", "-DBUG_DEDUCT_IGNORES_RESTORE"}, true},
		{"release_before_restore", []string{"-DGONE", "-DBUG_RELEASE_FIRST"}, true},
		// A later life of order 0's ID (Temporal forgot the first), days later.
		{"second_life", []string{"-DSECOND_LIFE"}, false},
		{"second_life_release_trusts_workflow", []string{"-DSECOND_LIFE", "-DBUG_RELEASE_TRUSTS_WORKFLOW"}, true},
		{"second_life_sold_gives_hold", []string{"-DSECOND_LIFE", "-DBUG_SOLD_GIVES_HOLD"}, true},
		// The database-only reservation (Redis unreachable) with the reconciler re-syncing during the run.
		{"fallback", []string{"-DFALLBACK", "-DRECON=2"}, false},
		{"resync_without_marks", []string{"-DFALLBACK", "-DRECON=2", "-DBUG_NO_MARK"}, true},
		{"tombstone_without_version", []string{"-DFALLBACK", "-DRECON=2", "-DBUG_TOMBSTONE_NO_VER"}, true},
		// The per-user limit (-DLIMIT: both orders of one user, limit 1, stock 2): the counts in Redis and in
		// user_units, and reconciliation's repair of the user's count (during the run with -DFALLBACK).
		{"limit", []string{"-DLIMIT", "-DGONE"}, false},
		{"limit_checked_before_marker", []string{"-DLIMIT", "-DGONE", "-DBUG_LIMIT_BEFORE_MARKER"}, true},
		{"release_keeps_user_count", []string{"-DLIMIT", "-DGONE", "-DBUG_RELEASE_KEEPS_USER"}, true},
		{"limit_fallback", []string{"-DLIMIT", "-DFALLBACK", "-DRECON=2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case is a C compile and a pan run of its own: one per core
			out := runSpin(t, model, c.flags)
			errs := regexp.MustCompile(`errors: (\d+)`).FindStringSubmatch(out)
			if errs == nil {
				t.Fatalf("no verdict from pan:\n%s", out)
			}
			if strings.Contains(out, "MEMLIM") || strings.Contains(out, "max search depth too small") {
				t.Fatalf("search incomplete:\n%s", out)
			}
			t.Logf("%s: %s", c.name, summary(out))
			if c.fail && errs[1] == "0" {
				t.Fatalf("broken variant %v verified: the model no longer catches it\n%s", c.flags, out)
			}
			if !c.fail && errs[1] != "0" {
				t.Fatalf("model check failed (%v); replay: spin -t -p -g %v reservation.pml in %s\n%s", c.flags, c.flags, t.TempDir(), out)
			}
		})
	}
}

func runSpin(t *testing.T, model string, flags []string) string {
	t.Helper()
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil && name != "./pan" {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	run("spin", append(append([]string{"-a"}, flags...), model)...)
	run("cc", "-O2", "-w", "-DSAFETY", "-DNOCLAIM", "-DMEMLIM=2048", "-o", "pan", "pan.c")
	return run("./pan", "-m100000")
}

func summary(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "assertion violated") || strings.Contains(l, "states, stored") ||
			strings.Contains(l, "errors:") || strings.Contains(l, "elapsed time") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return strings.Join(keep, "; ")
}
