package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/testenv"
)

// ports are the listeners of one stack, on free ports.
type ports struct {
	http, temporal, ui, redis, provider int
}

// freePorts picks the stack's ports below the ephemeral range: the tests restart the stack on the same
// ports, and an ephemeral port can be taken in between by any outgoing connection on the machine.
func freePorts(tb testing.TB) ports {
	tb.Helper()
	return ports{
		http:     testenv.StablePort(tb, localIP),
		temporal: testenv.StablePort(tb, localIP),
		ui:       testenv.StablePort(tb, localIP),
		redis:    testenv.StablePort(tb, localIP),
		provider: testenv.StablePort(tb, localIP),
	}
}

func (p ports) args(dataDir string) []string {
	return []string{"localstack", "--data-dir", dataDir,
		"--http-addr", fmt.Sprintf("%s:%d", localIP, p.http),
		"--temporal-port", strconv.Itoa(p.temporal),
		"--ui-port", strconv.Itoa(p.ui),
		"--redis-port", strconv.Itoa(p.redis),
		"--provider-port", strconv.Itoa(p.provider)}
}

// storeEnv points the stack at the real MySQL and Redis when the tests run against them (CI's second pass),
// each in a database and key prefix of this test's own; else it is empty and the stack embeds both.
func storeEnv(tb testing.TB) map[string]string {
	tb.Helper()
	env := map[string]string{"LOG_LEVEL": "warn"}
	if testenv.RealMySQL() {
		env["MYSQL_DSN"] = testenv.MySQLDatabase(tb)
	}
	if testenv.RealRedis() {
		_, prefix := testenv.RedisClient(tb)
		env["REDIS_ADDR"] = os.Getenv("REDIS_ADDR")
		env["REDIS_KEY_PREFIX"] = prefix
	}
	return env
}

// running is a stack started by run in this process.
type running struct {
	api, ui string
	stdout  *testenv.SyncBuffer
	stderr  *testenv.SyncBuffer
	cancel  context.CancelFunc
	done    chan error
}

// startStack runs the command's run with args and env and waits until the API answers /healthz.
func startStack(tb testing.TB, args []string, env map[string]string, p ports) *running {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{
		api: fmt.Sprintf("http://%s:%d", localIP, p.http), ui: fmt.Sprintf("http://%s:%d", localIP, p.ui),
		stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}, cancel: cancel, done: make(chan error, 1),
	}
	go func() { r.done <- run(ctx, args, func(k string) string { return env[k] }, r.stdout, r.stderr) }()
	tb.Cleanup(func() {
		r.cancel()
		<-r.done
		if tb.Failed() {
			tb.Logf("stack stdout:\n%s\nstack stderr:\n%s", r.stdout, r.stderr)
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-r.done:
			r.done <- err
			tb.Fatalf("stack exited while starting: %v\n%s", err, r.stderr)
		default:
		}
		resp, err := http.Get(r.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(r.stdout.String(), "Place a first order") {
				return r
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("stack did not answer /healthz within 2 minutes\n%s", r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops the stack like Ctrl-C and checks it stopped cleanly.
func (r *running) stop(tb testing.TB) {
	tb.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- nil // for the cleanup
		if err != nil {
			tb.Fatalf("stop: %v", err)
		}
	case <-time.After(time.Minute):
		tb.Fatal("stack did not stop within a minute")
	}
}

// call sends a request and decodes a JSON answer into out (when not nil); it returns the status.
func call(tb testing.TB, method, url string, body []byte, header map[string]string, out any) int {
	tb.Helper()
	r := testenv.Do(tb, method, url, body, header)
	if out != nil && len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			tb.Fatalf("%s %s: %d: decode %q: %v", method, url, r.Status, r.Body, err)
		}
	}
	return r.Status
}

// eventually retries check until it returns "" or the limit passes; then it fails with the last reason.
func eventually(tb testing.TB, limit time.Duration, check func() string) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %s: %s", limit, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
