package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ordersaga/ordersaga/internal/devserver"
)

// benchFlood is pair 5: orders accepted per second by 64 closed-loop winners while an open loop of orders of
// a sold-out SKU floods the API at -flood-x times the accepted rate, against the same winners without the
// flood. Both sides come from one run of `flashsale --flood-pair` against the local stack (embedded Temporal,
// miniredis, SQLite) started as a subprocess on free ports in a temporary data directory; with -profile, the
// stack is CPU-profiled during each phase's counted window (cpu-flood-no-flood.pprof, cpu-flood-flood.pprof).
func benchFlood(ctx context.Context, o opts) ([]pair, error) {
	bin := filepath.Join(o.tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./localstack", "./flashsale")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build the local stack and flashsale: %w", err)
	}
	st, err := startLocalStack(ctx, o, filepath.Join(bin, "localstack"))
	if err != nil {
		return nil, err
	}
	defer st.stop()

	args := []string{"--flood-pair", "--target", st.api, "--admin-token", st.admin,
		"--duration", o.floodDur.String(), "--flood-x", strconv.FormatFloat(o.floodX, 'g', -1, 64),
		"--flood-warmup", o.floodWarmup.String(), "--concurrency", strconv.Itoa(o.conc), "--run-id", "bench-" + randomID()}
	fs := exec.CommandContext(ctx, filepath.Join(bin, "flashsale"), args...)
	var stdout bytes.Buffer
	fs.Stdout = io.MultiWriter(&stdout, os.Stderr)
	progress, err := fs.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := fs.Start(); err != nil {
		return nil, err
	}
	var profiles sync.WaitGroup
	sc := bufio.NewScanner(progress)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if phase, ok := floodPhaseStart(line); ok && st.pprof != "" {
			profiles.Go(func() { st.profile(ctx, o, phase) })
		}
	}
	runErr := fs.Wait()
	profiles.Wait()
	fl, err := parseFloodLine(stdout.String())
	if err != nil {
		if runErr != nil {
			err = fmt.Errorf("flashsale: %w; %w", runErr, err)
		}
		return nil, err
	}
	// An exit status of 1 with a FLOOD line is a winner without an answer: the row shows it (lost).
	return []pair{fl.pair()}, nil
}

// localStack is the local stack running as a subprocess.
type localStack struct {
	cmd        *exec.Cmd
	api, pprof string
	admin      string
	log        string
	done       chan struct{}
	waitErr    error
	stopOnce   sync.Once
}

// startLocalStack starts the built local stack on free ports in a data directory of o.tmp and waits until its
// API is ready (GET /readyz 200).
func startLocalStack(ctx context.Context, o opts, path string) (*localStack, error) {
	port := func() int {
		p, err := devserver.FreePort("127.0.0.1")
		if err != nil {
			panic(err)
		}
		return p
	}
	httpPort, temporalPort, uiPort, redisPort := port(), port(), port(), port()
	st := &localStack{api: fmt.Sprintf("http://127.0.0.1:%d", httpPort), admin: "bench-admin-token",
		log: filepath.Join(o.tmp, "localstack.log"), done: make(chan struct{})}
	args := []string{"--data-dir", filepath.Join(o.tmp, "flood-stack"), "--demo=false",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "--temporal-port", strconv.Itoa(temporalPort),
		"--ui-port", strconv.Itoa(uiPort), "--redis-port", strconv.Itoa(redisPort)}
	if o.profileDir != "" {
		st.pprof = fmt.Sprintf("127.0.0.1:%d", port())
		args = append(args, "--pprof-addr", st.pprof)
	}
	logFile, err := os.Create(st.log)
	if err != nil {
		return nil, err
	}
	st.cmd = exec.Command(path, args...)
	st.cmd.Stdout, st.cmd.Stderr = logFile, logFile
	st.cmd.Env = localStackEnv(os.Environ(), st.admin)
	if err := st.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		st.waitErr = st.cmd.Wait()
		logFile.Close()
		close(st.done)
	}()
	fmt.Fprintf(os.Stderr, "bench: local stack pid %d at %s (log %s)\n", st.cmd.Process.Pid, st.api, st.log)
	deadline := time.Now().Add(3 * time.Minute)
	hc := &http.Client{Timeout: 3 * time.Second}
	for {
		select {
		case <-st.done:
			return nil, fmt.Errorf("the local stack exited while starting: %v\n%s", st.waitErr, st.tail())
		case <-ctx.Done():
			st.stop()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if resp, err := hc.Get(st.api + "/readyz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return st, nil
			}
		}
		if time.Now().After(deadline) {
			st.stop()
			return nil, fmt.Errorf("the local stack was not ready within 3 minutes\n%s", st.tail())
		}
	}
}

// localStackEnv is the environment of the local stack: this one's, without what would point it at real
// servers (the bench's own REDIS_ADDR and MYSQL_DSN are for the other pairs), with the bench's admin token, a
// webhook secret, quiet logs and the default payment timeout (no order expires during the run).
func localStackEnv(env []string, admin string) []string {
	drop := map[string]bool{"REDIS_ADDR": true, "MYSQL_DSN": true, "TEMPORAL_ADDRESS": true, "SQLITE_PATH": true,
		"HTTP_ADDR": true, "ADMIN_ADDR": true, "ADMIN_TOKEN": true, "PAYMENT_WEBHOOK_SECRET": true, "LOG_LEVEL": true,
		"ORDER_PAYMENT_TIMEOUT": true, "CALLER_IDENTITY": true, "REDIS_KEY_PREFIX": true}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, "ADMIN_TOKEN="+admin, "PAYMENT_WEBHOOK_SECRET=bench-webhook-secret", "LOG_LEVEL=warn")
}

// stop sends SIGTERM and waits for the stack to finish (a minute at most, then SIGKILL).
func (st *localStack) stop() {
	st.stopOnce.Do(func() {
		_ = st.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-st.done:
		case <-time.After(time.Minute):
			fmt.Fprintln(os.Stderr, "bench: the local stack did not stop within a minute of SIGTERM: killed")
			_ = st.cmd.Process.Kill()
			<-st.done
		}
	})
}

// tail is the end of the stack's log, for an error.
func (st *localStack) tail() string {
	raw, _ := os.ReadFile(st.log)
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

// profile takes a CPU profile of the stack over the counted window of a phase: it waits out the warm-up, then
// asks the stack's profiler for the phase's duration.
func (st *localStack) profile(ctx context.Context, o opts, phase string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(o.floodWarmup):
	}
	secs := max(int(o.floodDur.Seconds()), 1)
	hc := &http.Client{Timeout: time.Duration(secs)*time.Second + time.Minute}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", st.pprof, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "bench: profile: HTTP %d\n", resp.StatusCode)
		return
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	path := filepath.Join(o.profileDir, "cpu-flood-"+strings.ReplaceAll(phase, " ", "-")+".pprof")
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return
	}
	fmt.Fprintf(os.Stderr, "bench: CPU profile of the local stack, phase %q: %s\n", phase, path)
}

// phaseStart matches flashsale's line at the start of a phase of the flood pair.
var phaseStart = regexp.MustCompile(`^flashsale flood: phase "([^"]+)" starts`)

func floodPhaseStart(line string) (string, bool) {
	m := phaseStart.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// floodLine is the FLOOD line of `flashsale --flood-pair` (flashsale/internal/sale/flood.go, FloodResult.Line).
type floodLine struct {
	X                                      float64
	Concurrency                            int64
	Window                                 time.Duration
	AcceptedNoFlood, AcceptedFlood         float64 // per second
	AcceptedCountNoFlood                   int64
	AcceptedCountFlood                     int64
	FloodRate, FloodOffered, FloodAnswer   float64 // per second
	FloodSkipped, SoldOutCount             int64
	SoldOutP50, SoldOutP99                 time.Duration
	AcceptedP50NoFlood, AcceptedP99NoFlood time.Duration
	AcceptedP50Flood, AcceptedP99Flood     time.Duration
	Lost, LostNoFlood, LostFlood           int64
	ErrorsNoFlood, ErrorsFlood             int64
	Timeouts, FloodErrors, FloodTimeouts   int64
	// ToolCPUNoFlood and ToolCPUFlood are the share of the machine's CPU flashsale itself took in each phase, in
	// percent (-1 when its line does not say).
	ToolCPUNoFlood, ToolCPUFlood float64
}

// parseFloodLine reads the last FLOOD line of out; every field the row needs must be there.
func parseFloodLine(out string) (floodLine, error) {
	var fl floodLine
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FLOOD ") {
			line = l
		}
	}
	if line == "" {
		return fl, errors.New("flashsale printed no FLOOD line")
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, "FLOOD ")) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fl, fmt.Errorf("FLOOD line: field %q is not key=value", f)
		}
		kv[k] = v
	}
	var errs []error
	num := func(key string, into *float64) {
		v, ok := kv[key]
		if !ok {
			errs = append(errs, fmt.Errorf("no %s", key))
			return
		}
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", key, v, err))
		}
		*into = x
	}
	count := func(key string, into *int64) {
		var x float64
		num(key, &x)
		*into = int64(x)
	}
	dur := func(key string, into *time.Duration) {
		v, ok := kv[key]
		if !ok {
			errs = append(errs, fmt.Errorf("no %s", key))
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", key, v, err))
		}
		*into = d
	}
	num("x", &fl.X)
	count("concurrency", &fl.Concurrency)
	dur("window", &fl.Window)
	num("accepted_no_flood", &fl.AcceptedNoFlood)
	num("accepted_flood", &fl.AcceptedFlood)
	count("accepted_count_no_flood", &fl.AcceptedCountNoFlood)
	count("accepted_count_flood", &fl.AcceptedCountFlood)
	num("flood_rate", &fl.FloodRate)
	num("flood_offered", &fl.FloodOffered)
	num("flood_answered", &fl.FloodAnswer)
	count("flood_skipped", &fl.FloodSkipped)
	count("soldout_count", &fl.SoldOutCount)
	dur("soldout_p50", &fl.SoldOutP50)
	dur("soldout_p99", &fl.SoldOutP99)
	dur("accepted_p50_no_flood", &fl.AcceptedP50NoFlood)
	dur("accepted_p99_no_flood", &fl.AcceptedP99NoFlood)
	dur("accepted_p50_flood", &fl.AcceptedP50Flood)
	dur("accepted_p99_flood", &fl.AcceptedP99Flood)
	count("lost", &fl.Lost)
	count("lost_no_flood", &fl.LostNoFlood)
	count("lost_flood", &fl.LostFlood)
	count("errors_no_flood", &fl.ErrorsNoFlood)
	count("errors_flood", &fl.ErrorsFlood)
	count("timeouts", &fl.Timeouts)
	count("flood_errors", &fl.FloodErrors)
	count("flood_timeouts", &fl.FloodTimeouts)
	fl.ToolCPUNoFlood, fl.ToolCPUFlood = -1, -1
	if _, ok := kv["tool_cpu_flood"]; ok {
		num("tool_cpu_no_flood", &fl.ToolCPUNoFlood)
		num("tool_cpu_flood", &fl.ToolCPUFlood)
	}
	if err := errors.Join(errs...); err != nil {
		return fl, fmt.Errorf("FLOOD line: %w", err)
	}
	if fl.Window <= 0 {
		return fl, fmt.Errorf("FLOOD line: window=%s", fl.Window)
	}
	return fl, nil
}

// soldOutP99Target is the bound on the sold-out answers' p99 during the flood.
const soldOutP99Target = 20 * time.Millisecond

// pair is the table's row: the accepted rate during the flood (real) against the rate without it (limit).
func (fl floodLine) pair() pair {
	side := func(name string, accepted, errs, lost int64, p50, p99 time.Duration) result {
		r := result{Name: name, Concurrency: int(fl.Concurrency), Ops: accepted, Errors: errs + lost, Elapsed: fl.Window, P50: p50, P99: p99}
		if r.Errors > 0 {
			r.FirstErr = fmt.Errorf("%d answers other than 201 and %d without an answer (lost): see flashsale's output", errs, lost)
		}
		return r
	}
	mark := "✓"
	if fl.SoldOutP99 >= soldOutP99Target {
		mark = "✗"
	}
	return pair{
		Layer: fmt.Sprintf("5 accepted orders during a %gx sold-out flood", fl.X),
		Real: side(fmt.Sprintf("winners' POST /v1/orders → 201, flood of %.0f/s", fl.FloodRate),
			fl.AcceptedCountFlood, fl.ErrorsFlood, fl.LostFlood, fl.AcceptedP50Flood, fl.AcceptedP99Flood),
		Limit: side("the same winners, no flood", fl.AcceptedCountNoFlood, fl.ErrorsNoFlood, fl.LostNoFlood,
			fl.AcceptedP50NoFlood, fl.AcceptedP99NoFlood),
		Target: 0.8,
		Comment: fmt.Sprintf("local stack (embedded Temporal, miniredis, SQLite) as a subprocess, flashsale --flood-pair: "+
			"%d closed-loop winners, each phase counted %s after a warm-up; flood %.0f/s asked (%gx the accepted rate "+
			"without it), %.0f/s offered, %d skipped at the in-flight cap, %.0f/s answered sold out, p50 / p99 %s / %s "+
			"(target p99 < %s %s), %d other answers (%d timeouts); winners without an answer (lost): %d (%d timeouts)",
			fl.Concurrency, fl.Window, fl.FloodRate, fl.X, fl.FloodOffered, fl.FloodSkipped, fl.FloodAnswer,
			roundLat(fl.SoldOutP50), roundLat(fl.SoldOutP99), soldOutP99Target, mark, fl.FloodErrors, fl.FloodTimeouts,
			fl.Lost, fl.Timeouts) + fl.toolCPUText(),
	}
}

// toolCPUText is the comment's words on the CPU flashsale itself took ("" when its line does not say).
func (fl floodLine) toolCPUText() string {
	if fl.ToolCPUFlood < 0 {
		return ""
	}
	return fmt.Sprintf("; flashsale itself took %.1f %% of the machine's CPU without the flood, %.1f %% with it", fl.ToolCPUNoFlood, fl.ToolCPUFlood)
}
