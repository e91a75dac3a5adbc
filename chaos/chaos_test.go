package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play the Temporal server process: the run re-executes its own binary with
// the subcommand temporal-server, which here is this test binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "temporal-server" {
		os.Exit(run(signalContext(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestShort runs the short scenario on the real services: one worker kill at each kill point, one API kill
// with its admission recovery, one Temporal restart, one of each store fault (Redis restarted empty and
// stopped 10 s, SCRIPT FLUSH, the database connections killed, and a MariaDB server of its own killed and
// restarted when MariaDB is installed), a few hundred orders; every invariant counter must be 0, and every
// fault must have been injected.
func TestShort(t *testing.T) {
	if os.Getenv("MYSQL_DSN") == "" {
		t.Skip("MYSQL_DSN is not set: the chaos run needs a real MySQL/MariaDB (and redis-server, or CHAOS_REDIS_ADDR)")
	}
	if testing.Short() {
		t.Skip("-short: the chaos run takes minutes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CHAOS_REDIS_ADDR") == "" {
		t.Skip("redis-server is not installed (apt-get install -y redis-server) and CHAOS_REDIS_ADDR is not set: the chaos run starts a Redis of its own")
	}
	sc, _ := defaultScenario("short")
	if _, _, err := mariadbBinaries(); err == nil {
		sc.OwnMySQL = true // MariaDB is installed: the run restarts a server of its own
	} else {
		t.Logf("no MySQL restart: %v", err)
	}
	sc.Orders = 320
	sc.Dir = t.TempDir()
	start := time.Now()
	res, err := runScenario(t.Context(), sc, testWriter{t})
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	t.Logf("%s (%s)", res.Line(), time.Since(start).Round(time.Second))
	for _, k := range invariantCounters {
		if res.counters[k] != 0 {
			t.Errorf("%s = %d, want 0", k, res.counters[k])
		}
	}
	kinds := []string{"worker_kill_reserve-after-script", "worker_kill_deduct-after-commit", "worker_kill_compensate-middle",
		"api_kill", "temporal_restart", "redis_script_flush", "mysql_kill_connections"}
	if os.Getenv("CHAOS_REDIS_ADDR") == "" { // the run's own Redis, which it can restart
		kinds = append(kinds, "redis_restart", "redis_stop_10s")
	}
	if sc.OwnMySQL {
		kinds = append(kinds, "mysql_restart")
	}
	for _, kind := range kinds {
		if res.counters["faults_"+kind] == 0 {
			t.Errorf("faults_%s = 0: the short run must inject one", kind)
		}
	}
	if res.counters["accepted"] == 0 {
		t.Errorf("no order accepted: the run checked nothing")
	}
	if !res.OK() {
		t.Logf("report:\n%s", res.report)
	}
}

// TestParseScenario pins the subcommands' defaults and the flag errors.
func TestParseScenario(t *testing.T) {
	var sb strings.Builder
	sc, err := parseScenario("worker-kill", nil, &sb)
	if err != nil || sc.Kills != 50 {
		t.Errorf("worker-kill defaults: %+v, %v; want 50 kills per point", sc, err)
	}
	sc, err = parseScenario("soak", []string{"-orders", "500", "-duration", "1m"}, &sb)
	if err != nil || sc.Orders != 500 || sc.Duration != time.Minute {
		t.Errorf("soak flags: %+v, %v", sc, err)
	}
	if _, err := parseScenario("nope", nil, &sb); err == nil {
		t.Error("an unknown subcommand must be an error")
	}
	if _, err := parseScenario("api-kill", []string{"-rate", "0"}, &sb); err == nil {
		t.Error("-rate 0 must be an error")
	}
}

// testWriter sends the run's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
