package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// output is a writer the test reads while paysim writes to it; lines signals each complete line.
type output struct {
	mu    sync.Mutex
	b     bytes.Buffer
	lines chan string
}

func newOutput() *output { return &output{lines: make(chan string, 100)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Write(p)
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if strings.HasSuffix(l, "\n") {
			o.lines <- strings.TrimSuffix(l, "\n")
		}
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// startServe runs `paysim serve -addr 127.0.0.1:0 args...` until the test ends, and returns its base URL and
// its stdout and stderr.
func startServe(t *testing.T, env map[string]string, args ...string) (string, *output, *output) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := newOutput(), newOutput()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"paysim", "serve", "-addr", "127.0.0.1:0"}, args...),
			func(k string) string { return env[k] }, stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("paysim serve ended with %v", err)
		}
	})
	select {
	case line := <-stdout.lines:
		base, ok := strings.CutPrefix(line, "paysim: refund provider listening on ")
		if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
			t.Fatalf("paysim serve's first line %q", line)
		}
		return base, stdout, stderr
	case err := <-done:
		t.Fatalf("paysim serve ended before listening: %v\n%s%s", err, stdout, stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("paysim serve did not listen:\n%s%s", stdout, stderr)
	}
	return "", nil, nil
}

func send(t *testing.T, base, secret string, r refunds.Refund) (refunds.Receipt, error) {
	t.Helper()
	p, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: base, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return p.Send(context.Background(), r)
}

func paysimRun(getenv map[string]string, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"paysim"}, args...), func(k string) string { return getenv[k] }, &out, &out)
	return out.String(), err
}

// TestServe: the simulator serves refunds, logs them without the secret, says one line on stdout, and
// `paysim refunds` prints its report.
func TestServe(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REFUND_PROVIDER_SECRET": "old-refund-secret, new-refund-secret"}
	base, stdout, stderr := startServe(t, env)
	r := refunds.Refund{EventID: "evt-serve", OrderID: "ord-serve", AmountCents: 1999, Currency: "CNY"}
	first, err := send(t, base, "new-refund-secret", r)
	if err != nil {
		t.Fatalf("a refund signed with REFUND_PROVIDER_SECRET's second secret: %v", err)
	}
	if again, err := send(t, base, "old-refund-secret", r); err != nil || again.Ref != first.Ref || !again.Replayed {
		t.Errorf("the refund again: %+v %v", again, err)
	}
	if _, err := send(t, base, refundsim.LocalStackSecret, r); err == nil {
		t.Errorf("the local stack's secret was accepted though REFUND_PROVIDER_SECRET is set")
	}

	out, err := paysimRun(map[string]string{"REFUND_PROVIDER_URL": base}, "refunds")
	if err != nil {
		t.Fatalf("paysim refunds: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1 refunds executed, 0 refused; 3 requests: 1 replays") ||
		strings.Join(strings.Fields(lines[1]), " ") != "evt-serve ord-serve 1999 CNY "+first.Ref+" requests 2" {
		t.Errorf("paysim refunds printed:\n%s", out)
	}
	out, err = paysimRun(nil, "refunds", "-json", "-provider", base)
	var rep refundsim.Report
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Refunds) != 1 || rep.Totals.BadSignature != 1 {
		t.Errorf("paysim refunds -json: %v\n%s", err, out)
	}

	if got := strings.TrimSpace(stdout.String()); strings.Count(got, "\n") != 0 {
		t.Errorf("stdout holds more than the listening line:\n%s", got)
	}
	logs := stderr.String()
	if !strings.Contains(logs, "event_id=evt-serve status=201") || !strings.Contains(logs, "status=401") {
		t.Errorf("the log lacks the requests:\n%s", logs)
	}
	for _, s := range []string{"old-refund-secret", "new-refund-secret", "v1="} {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds %q:\n%s", s, logs)
		}
	}
}

func TestServe_DefaultSecretAndFaults(t *testing.T) {
	t.Parallel()
	base, _, _ := startServe(t, nil, "-refuse-share", "1", "-seed", "7")
	_, err := send(t, base, refundsim.LocalStackSecret, refunds.Refund{EventID: "evt-d", OrderID: "o", AmountCents: 1, Currency: "CNY"})
	if r, ok := refunds.Refused(err); !ok || r.Code != refunds.CodeRefused {
		t.Errorf("signed with the local stack's secret, -refuse-share 1: %v, want refused", err)
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PAYMENT_WEBHOOK_SECRET": "whsec-never-printed", "REFUND_PROVIDER_SECRET": "refund-never-printed"}
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{nil, 2, []string{"usage", "pay", "serve", "refunds"}},
		{[]string{"pet"}, 2, []string{"usage"}},
		{[]string{"-h"}, 0, []string{"usage"}},
		{[]string{"serve", "-fail-share", "1.5"}, 2, []string{"-fail-share", "between 0 and 1"}},
		{[]string{"serve", "-timeout-share", "x"}, 2, []string{"-timeout-share"}},
		{[]string{"serve", "-refuse-share", "-0.5"}, 2, []string{"-refuse-share"}},
		{[]string{"serve", "-seed", "x"}, 2, []string{"-seed"}},
		{[]string{"serve", "-bogus"}, 2, []string{"-bogus"}},
		{[]string{"serve", "now"}, 2, []string{"no argument"}},
		{[]string{"serve", "-h"}, 0, []string{"-addr", "-secret", "-fail-share", "-timeout-share", "-refuse-share", "-seed"}},
		{[]string{"serve", "-addr", "127.0.0.1:notaport"}, 1, []string{"127.0.0.1:notaport"}},
		{[]string{"refunds", "-x"}, 2, []string{"-x"}},
		{[]string{"refunds", "-h"}, 0, []string{"-provider", "-json"}},
		{[]string{"pay", "-h"}, 0, []string{"-target", "-secret"}},
		{[]string{"pay", "-amount", "lots", "o-1"}, 2, []string{"-amount"}},
		{[]string{"pay"}, 2, []string{"usage", "pay <order_id>"}},
	} {
		out, err := paysimRun(env, tc.args...)
		if err != nil {
			out += "error: " + err.Error()
		}
		if code := exitCode(err); code != tc.code {
			t.Errorf("paysim %q exits %d, want %d:\n%s", tc.args, code, tc.code, out)
		}
		for _, s := range tc.says {
			if !strings.Contains(out, s) {
				t.Errorf("paysim %q does not say %q:\n%s", tc.args, s, out)
			}
		}
		for _, secret := range env {
			if strings.Contains(out, secret) {
				t.Errorf("paysim %q printed a secret:\n%s", tc.args, out)
			}
		}
	}
}

func TestRefunds_NoProvider(t *testing.T) {
	t.Parallel()
	_, err := paysimRun(nil, "refunds", "-provider", "http://127.0.0.1:1")
	if err == nil || exitCode(err) != 1 || errors.Is(err, io.EOF) {
		t.Errorf("paysim refunds with no provider: %v", err)
	}
}
