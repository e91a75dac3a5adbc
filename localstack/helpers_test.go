package main

import (
	"context"
	"encoding/json"
	"errors"
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

// startStack runs the command's run with args and env and waits until the API answers /healthz. A port of p
// can be taken by another process between its pick and the stack's listen (the suites of CI's background run
// pick ports from the same range): the stack then exits naming it, and is started again on new ports, at most
// three times; p and the args follow the new ports.
func startStack(tb testing.TB, args []string, env map[string]string, p *ports) *running {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		r, err := startOnce(tb, args, env, *p)
		if err == nil {
			return r
		}
		if attempt == 3 || !strings.Contains(err.Error(), "already in use") {
			tb.Fatalf("stack exited while starting: %v\n%s", err, r.stderr)
		}
		tb.Logf("attempt %d: %v; starting again on other ports", attempt, err)
		next := freePorts(tb)
		args = p.moveTo(args, next)
		*p = next
	}
}

// moveTo rewrites the port arguments of p.args (and --http-addr's) to next's.
func (p ports) moveTo(args []string, next ports) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if i == 0 {
			continue
		}
		switch args[i-1] {
		case "--http-addr":
			out[i] = fmt.Sprintf("%s:%d", localIP, next.http)
		case "--temporal-port":
			out[i] = strconv.Itoa(next.temporal)
		case "--ui-port":
			out[i] = strconv.Itoa(next.ui)
		case "--redis-port":
			out[i] = strconv.Itoa(next.redis)
		case "--provider-port":
			out[i] = strconv.Itoa(next.provider)
		}
	}
	return out
}

// startOnce is one start of startStack: the stack's exit error when it exited while starting.
func startOnce(tb testing.TB, args []string, env map[string]string, p ports) (*running, error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{
		api: fmt.Sprintf("http://%s:%d", localIP, p.http), ui: fmt.Sprintf("http://%s:%d", localIP, p.ui),
		stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}, cancel: cancel, done: make(chan error, 1),
	}
	go func() { r.done <- run(ctx, args, func(k string) string { return env[k] }, r.stdout, r.stderr) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-r.done:
			cancel()
			if err == nil {
				err = errors.New("exited without an error")
			}
			return r, err
		default:
		}
		resp, err := http.Get(r.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(r.stdout.String(), "Place a first order") {
				tb.Cleanup(func() {
					r.cancel()
					<-r.done
					if tb.Failed() {
						tb.Logf("stack stdout:\n%s\nstack stderr:\n%s", r.stdout, r.stderr)
					}
				})
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			cancel()
			<-r.done
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
