package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/gitrev"
)

// TestMain lets the test binary play the Temporal server process (the run re-executes its own binary with
// the subcommand temporal-server, which here is this test binary) and a fake worker (envFakeWorker).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "temporal-server" {
		os.Exit(run(signalContext(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if mode := os.Getenv(envFakeWorker); mode != "" {
		os.Exit(fakeWorker(mode))
	}
	os.Exit(m.Run())
}

// needServices skips a chaos run without a real MySQL/MariaDB, and under -short.
func needServices(t *testing.T) {
	t.Helper()
	if os.Getenv("MYSQL_DSN") == "" {
		t.Skip("MYSQL_DSN is not set: the chaos run needs a real MySQL/MariaDB (and redis-server, or CHAOS_REDIS_ADDR)")
	}
	if testing.Short() {
		t.Skip("-short: the chaos run takes minutes")
	}
}

// runChecked runs sc and fails the test unless every invariant counter is 0, some orders were accepted and
// some buyers refused (their keys checked by refused_with_order); the report is logged when the run is not OK
// (a counter the caller checks next included).
func runChecked(t *testing.T, sc scenario) result {
	t.Helper()
	start := time.Now()
	res, err := runScenario(t.Context(), sc, testWriter{t})
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	t.Logf("%s (%s)", res.Line(), time.Since(start).Round(time.Second))
	var rows strings.Builder
	writeMarkdown(&rows, res, markdownRun{Commit: gitrev.Commit("."), Started: start,
		Command: fmt.Sprintf("MYSQL_DSN=… go test -count=1 -v -run '^%s$' ./chaos", t.Name())})
	t.Logf("RELIABILITY.md rows:\n%s", rows.String())
	for _, k := range invariantCounters {
		if res.counters[k] != 0 {
			t.Errorf("%s = %d, want 0", k, res.counters[k])
		}
	}
	if res.counters["accepted"] == 0 {
		t.Errorf("no order accepted: the run checked nothing")
	}
	if res.counters["refused_checked"] == 0 {
		t.Errorf("no key answered 409: refused_with_order checked nothing (%s must sell out during the run)", soldOutSKU)
	}
	t.Cleanup(func() {
		if t.Failed() || !res.OK() {
			t.Logf("report:\n%s", res.report)
		}
	})
	return res
}

// TestShort runs the short scenario on the real services: one worker kill at each kill point, one API kill
// with its admission recovery, one Temporal restart, one of each store fault (Redis restarted empty and
// stopped 10 s, SCRIPT FLUSH, the database connections killed, and a MariaDB server of its own killed and
// restarted when MariaDB is installed, which CI=true requires), a few hundred orders; every invariant counter
// must be 0, and every fault must have been injected: each kill point hit by a worker that died there.
func TestShort(t *testing.T) {
	needServices(t)
	sc, _ := defaultScenario("short")
	own, skip, err := shortPreflight(os.Getenv, exec.LookPath, func() error { _, _, err := mariadbBinaries(); return err })
	switch {
	case err != nil:
		t.Fatal(err)
	case skip != "":
		t.Skip(skip)
	case !own:
		t.Log("no MySQL restart: mariadb-install-db and mariadbd not found")
	}
	sc.OwnMySQL = own
	sc.Orders = 320
	sc.Dir = t.TempDir()
	res := runChecked(t, sc)
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
}

// TestRefundKill runs the refund-kill scenario on the real services, with the refund provider simulator as a
// process of its own (`paysim serve`, which the workers' refund senders call over HTTP): a worker killed at
// refund-after-send (between the provider's answer and the refund's mark) and restarted, then the provider
// blackholed for 10 s, with the load paying orders twice and with wrong amounts. Every refund recorded must be
// at the provider once, for its amount and currency, under the row's reference, none unsent; the killed
// refund must have been sent again and executed once; and the saga's invariants hold.
func TestRefundKill(t *testing.T) {
	needServices(t)
	if _, skip, err := shortPreflight(os.Getenv, exec.LookPath, func() error { return nil }); err != nil {
		t.Fatal(err)
	} else if skip != "" {
		t.Skip(skip)
	}
	sc, _ := defaultScenario("refund-kill")
	sc.Dir = t.TempDir()
	res := runChecked(t, sc)
	for _, kind := range []string{"worker_kill_refund-after-send", "provider_blackhole_10s"} {
		if res.counters["faults_"+kind] == 0 {
			t.Errorf("faults_%s = 0: the run must inject one", kind)
		}
	}
	if res.counters["refund_kills"] == 0 || res.counters["refunds_checked"] < 10 {
		t.Errorf("refund_kills %d, refunds_checked %d: want a kill and tens of refunds checked", res.counters["refund_kills"], res.counters["refunds_checked"])
	}
}

// shortPreflight decides what the short run can do on this machine: restart a MariaDB server of its own
// (ownMySQL) when mariadb finds its binaries, and start a Redis of its own unless CHAOS_REDIS_ADDR names one.
// Under CI=true (.ci/run exports it) a missing binary is an error: skipped there, the faults it serves would
// go untested while CI stays green. Elsewhere a missing redis-server skips the run and a missing MariaDB drops
// the MariaDB restart.
func shortPreflight(getenv func(string) string, lookPath func(string) (string, error), mariadb func() error) (ownMySQL bool, skip string, err error) {
	ci := getenv("CI") == "true"
	if _, lerr := lookPath("redis-server"); lerr != nil && getenv("CHAOS_REDIS_ADDR") == "" {
		msg := "redis-server is not installed (apt-get install -y redis-server) and CHAOS_REDIS_ADDR is not set: the chaos run starts a Redis of its own"
		if ci {
			return false, "", errors.New("CI=true: " + msg)
		}
		return false, msg, nil
	}
	if merr := mariadb(); merr != nil {
		if ci {
			return false, "", fmt.Errorf("CI=true: the MariaDB restart cannot run: %w", merr)
		}
		return false, "", nil
	}
	return true, "", nil
}

// TestShortPreflight: under CI=true (.ci/run exports it) a missing redis-server or MariaDB fails the short
// run; elsewhere the first skips it and the second drops the MariaDB restart.
func TestShortPreflight(t *testing.T) {
	t.Parallel()
	found := func(string) (string, error) { return "/usr/bin/redis-server", nil }
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	noMariaDB := func() error { return errors.New("mariadbd not found") }
	haveMariaDB := func() error { return nil }
	for _, c := range []struct {
		name     string
		env      map[string]string
		lookPath func(string) (string, error)
		mariadb  func() error
		wantOwn  bool
		wantSkip bool
		wantErr  string
	}{
		{"everything installed: the MariaDB restart runs", map[string]string{"CI": "true"}, found, haveMariaDB, true, false, ""},
		{"no MariaDB outside CI: no MariaDB restart", nil, found, noMariaDB, false, false, ""},
		{"no MariaDB under CI=true: the run fails", map[string]string{"CI": "true"}, found, noMariaDB, false, false, "mariadbd not found"},
		{"no redis-server outside CI: skipped", nil, missing, haveMariaDB, false, true, ""},
		{"no redis-server under CI=true: the run fails", map[string]string{"CI": "true"}, missing, haveMariaDB, false, false, "redis-server"},
		{"no redis-server but CHAOS_REDIS_ADDR under CI=true", map[string]string{"CI": "true", "CHAOS_REDIS_ADDR": "127.0.0.1:6379"}, missing, haveMariaDB, true, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			own, skip, err := shortPreflight(func(k string) string { return c.env[k] }, c.lookPath, c.mariadb)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "CI=true") {
					t.Fatalf("err = %v (skip %q), want one naming CI=true and %q", err, skip, c.wantErr)
				}
				return
			}
			if err != nil || own != c.wantOwn || (skip != "") != c.wantSkip {
				t.Fatalf("= own %v, skip %q, err %v; want own %v, skipped %v", own, skip, err, c.wantOwn, c.wantSkip)
			}
		})
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
	sc, err = parseScenario("cluster", nil, &sb)
	if err != nil || sc.Kills != 1 || !sc.RedisCluster {
		t.Errorf("cluster defaults: %+v, %v; want one fault of each kind on a Redis Cluster", sc, err)
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
