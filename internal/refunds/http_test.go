package refunds_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/refundsim/refundsimtest"
)

const secret = "refund-adapter-test-secret"

// simulator starts the real simulator in an httptest server.
func simulator(t *testing.T, f refundsim.Faults) (*refundsim.Server, string) {
	t.Helper()
	s, err := refundsim.New(refundsim.Options{Secrets: []string{secret}, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return s, srv.URL
}

func provider(t *testing.T, c refunds.HTTPConfig) *refunds.HTTPProvider {
	t.Helper()
	if c.Secret == "" {
		c.Secret = secret
	}
	p, err := refunds.NewHTTPProvider(c)
	if err != nil {
		t.Fatalf("NewHTTPProvider: %v", err)
	}
	return p
}

func refund(eventID string) refunds.Refund {
	return refunds.Refund{EventID: eventID, OrderID: "ord-" + eventID, AmountCents: 1999, Currency: "CNY"}
}

// retryable fails the test unless err is an error and not a permanent refusal.
func retryable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want a retryable one", what)
	}
	if r, ok := refunds.Refused(err); ok {
		t.Fatalf("%s: %v is a permanent refusal (%s), want a retryable error", what, err, r.Code)
	}
}

func refusedWith(t *testing.T, what string, err error, code string) *refunds.RefusedError {
	t.Helper()
	r, ok := refunds.Refused(err)
	if !ok || r.Code != code || r.Reason == "" {
		t.Fatalf("%s: %v, want a RefusedError %s with a reason", what, err, code)
	}
	return r
}

func TestHTTPProvider_SendAndReplay(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{})
	p := provider(t, refunds.HTTPConfig{URL: base + "/"})
	ctx := context.Background()

	first, err := p.Send(ctx, refund("evt-1"))
	if err != nil || first.Ref == "" || first.Replayed {
		t.Fatalf("new refund: %+v %v", first, err)
	}
	again, err := p.Send(ctx, refund("evt-1"))
	if err != nil || again != (refunds.Receipt{Ref: first.Ref, Replayed: true}) {
		t.Errorf("the same refund again: %+v %v, want %s replayed", again, err, first.Ref)
	}
	other := refund("evt-1")
	other.AmountCents++
	_, err = p.Send(ctx, other)
	refusedWith(t, "another amount on the key", err, refunds.CodeIdempotencyMismatch)

	rep := sim.Report()
	if len(rep.Refunds) != 1 || rep.Refunds[0].RefundID != first.Ref || rep.Refunds[0].Requests != 3 || rep.Totals.Executed != 1 {
		t.Errorf("the simulator saw %+v, want refund %s once, from 3 requests", rep, first.Ref)
	}
}

func TestHTTPProvider_RefusedStaysRefused(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{RefuseShare: 1})
	p := provider(t, refunds.HTTPConfig{URL: base})
	_, err := p.Send(context.Background(), refund("evt-no"))
	first := refusedWith(t, "refuse share 1", err, refunds.CodeRefused)
	if err := sim.SetFaults(refundsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	_, err = p.Send(context.Background(), refund("evt-no"))
	if again := refusedWith(t, "the refused key again", err, refunds.CodeRefused); *again != *first {
		t.Errorf("the refusal changed: %+v then %+v", first, again)
	}
	if rep := sim.Report(); rep.Totals.Executed != 0 {
		t.Errorf("a refused refund was executed: %+v", rep)
	}
}

func TestHTTPProvider_InvalidRefundIsNeverSent(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{})
	p := provider(t, refunds.HTTPConfig{URL: base})
	_, err := p.Send(context.Background(), refunds.Refund{EventID: "evt-neg", OrderID: "o", AmountCents: -1, Currency: "CNY"})
	refusedWith(t, "a negative amount", err, refunds.CodeBadRequest)
	if rep := sim.Report(); rep.Totals.Requests != 0 {
		t.Errorf("an invalid refund was sent: %+v", rep.Totals)
	}
}

func TestHTTPProvider_FailureIsRetryable(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{FailShare: 1})
	p := provider(t, refunds.HTTPConfig{URL: base})
	_, err := p.Send(context.Background(), refund("evt-f"))
	retryable(t, "a 503", err)
	if !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "evt-f") {
		t.Errorf("the error %q names neither the status nor the event", err)
	}
	if rep := sim.Report(); rep.Totals.Executed != 0 || rep.Totals.Failed != 1 {
		t.Errorf("the simulator's failure: %+v", rep.Totals)
	}
}

// TestHTTPProvider_LostAnswer: the provider executes and never answers; Send gives up within its Timeout
// (the context has none), and the retry is answered the first refund, executed once.
func TestHTTPProvider_LostAnswer(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{TimeoutShare: 1})
	const timeout = 500 * time.Millisecond
	p := provider(t, refunds.HTTPConfig{URL: base, Timeout: timeout})
	start := time.Now()
	_, err := p.Send(context.Background(), refund("evt-t"))
	retryable(t, "a lost answer", err)
	if d := time.Since(start); d < timeout || d > timeout+5*time.Second {
		t.Errorf("Send gave up after %s, want about its timeout %s", d, timeout)
	}
	if err := sim.SetFaults(refundsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	rec, err := p.Send(context.Background(), refund("evt-t"))
	rep := sim.Report()
	if err != nil || !rec.Replayed || len(rep.Refunds) != 1 || rec.Ref != rep.Refunds[0].RefundID || rep.Totals.Executed != 1 {
		t.Errorf("the retry: %+v %v; the simulator: %+v; want the first refund, executed once", rec, err, rep)
	}
}

func TestHTTPProvider_BlackholeIsRetryable(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{})
	sim.Blackhole(time.Hour)
	const timeout = 500 * time.Millisecond
	p := provider(t, refunds.HTTPConfig{URL: base, Timeout: timeout})
	start := time.Now()
	_, err := p.Send(context.Background(), refund("evt-bh"))
	retryable(t, "a blackhole", err)
	if d := time.Since(start); d > timeout+5*time.Second {
		t.Errorf("Send gave up after %s, want about its timeout %s", d, timeout)
	}
	if rep := sim.Report(); rep.Totals.Executed != 0 || rep.Totals.Blackholed != 1 {
		t.Errorf("the blackhole: %+v", rep.Totals)
	}
}

func TestHTTPProvider_WrongSecret(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{})
	const wrong = "not-the-providers-secret"
	p := provider(t, refunds.HTTPConfig{URL: base, Secret: wrong})
	_, err := p.Send(context.Background(), refund("evt-s"))
	retryable(t, "a wrong secret", err)
	if !strings.Contains(err.Error(), "REFUND_PROVIDER_SECRET") || strings.Contains(err.Error(), wrong) {
		t.Errorf("the error %q should name REFUND_PROVIDER_SECRET and not hold the secret", err)
	}
	if rep := sim.Report(); rep.Totals.BadSignature != 1 || rep.Totals.Executed != 0 {
		t.Errorf("the simulator: %+v", rep.Totals)
	}
}

// TestHTTPProvider_MisbehavingProvider: answers the simulator never gives.
func TestHTTPProvider_MisbehavingProvider(t *testing.T) {
	t.Parallel()
	answer := func(r *http.Request, amount int64, currency, refundID string) string {
		var in refunds.Refund
		_ = json.NewDecoder(r.Body).Decode(&in)
		b, _ := json.Marshal(refunds.Answer{RefundID: refundID, EventID: in.EventID, OrderID: in.OrderID, AmountCents: amount,
			Currency: currency, Status: refunds.StatusSucceeded, CreatedAt: time.Now()})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   func(r *http.Request) string
		code   string // a RefusedError's; "" = retryable
		says   []string
	}{
		{"another amount", 201, func(r *http.Request) string { return answer(r, 1, "CNY", "re_x") }, refunds.CodeAnswerMismatch, []string{"1999", "re_x"}},
		{"another currency", 200, func(r *http.Request) string { return answer(r, 1999, "USD", "re_x") }, refunds.CodeAnswerMismatch, []string{"USD"}},
		{"no refund_id", 201, func(r *http.Request) string { return answer(r, 1999, "CNY", "") }, "", []string{"refund_id"}},
		{"not json", 201, func(*http.Request) string { return "<html>ok</html>" }, "", []string{"201"}},
		{"too long", 201, func(*http.Request) string { return strings.Repeat(" ", refunds.MaxAnswerBytes+1) }, "", []string{"201"}},
		{"unreadable refusal", 422, func(*http.Request) string { return "no" }, "http-422", nil},
		{"refusal without code", 409, func(*http.Request) string { return `{"reason":"busy"}` }, "http-409", []string{"busy"}},
		{"too many requests", 429, func(*http.Request) string { return "" }, "", []string{"429"}},
		{"server error", 500, func(*http.Request) string { return `{"code":"internal","reason":"oops"}` }, "", []string{"500", "oops"}},
		{"accepted", 202, func(*http.Request) string { return "{}" }, "", []string{"202"}},
		{"redirect", 307, func(*http.Request) string { return "" }, "", []string{"307"}},
		{"forbidden", 403, func(*http.Request) string { return "" }, "", []string{"403", "REFUND_PROVIDER_SECRET"}},
		// A provider that quotes our signature back: the error must not carry it.
		{"signature echoed", 401, func(r *http.Request) string {
			b, _ := json.Marshal(refunds.Problem{Code: refunds.CodeInvalidSignature,
				Reason: "bad header " + r.Header.Get(refunds.SignatureHeader) + " with " + secret})
			return string(b)
		}, "", []string{"401", "REFUND_PROVIDER_SECRET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signatures := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				signatures <- r.Header.Get(refunds.SignatureHeader)
				if tc.status == 307 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body(r)))
			}))
			t.Cleanup(srv.Close)
			_, err := provider(t, refunds.HTTPConfig{URL: srv.URL}).Send(context.Background(), refund("evt-m"))
			says := tc.says
			if tc.code == "" {
				retryable(t, tc.name, err)
				says = append(says, "evt-m")
			} else {
				refusedWith(t, tc.name, err, tc.code)
			}
			for _, s := range says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error %q does not say %q", err, s)
				}
			}
			_, sig, _ := strings.Cut(<-signatures, "v1=")
			if sig == "" || strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), secret) {
				t.Errorf("the error %q holds the signature or the secret", err)
			}
		})
	}
}

func TestHTTPProvider_ContextCancelled(t *testing.T) {
	t.Parallel()
	sim, base := simulator(t, refundsim.Faults{})
	sim.Blackhole(time.Hour)
	p := provider(t, refunds.HTTPConfig{URL: base, Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Send(ctx, refund("evt-ctx"))
	retryable(t, "the caller's deadline", err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error %v does not wrap the deadline", err)
	}
}

func TestNewHTTPProvider_BadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    refunds.HTTPConfig
		says string
	}{
		{"no url", refunds.HTTPConfig{Secret: "s"}, "REFUND_PROVIDER_URL"},
		{"plain http elsewhere", refunds.HTTPConfig{URL: "http://pay.example.com", Secret: "s"}, "REFUND_PROVIDER_URL"},
		{"no scheme", refunds.HTTPConfig{URL: "pay.example.com", Secret: "s"}, "REFUND_PROVIDER_URL"},
		{"credentials", refunds.HTTPConfig{URL: "https://u:hunter2@pay.example.com", Secret: "s"}, "REFUND_PROVIDER_URL"},
		{"credentials, not a URL", refunds.HTTPConfig{URL: "https://u:s3cret@host:bad", Secret: "s"}, "REFUND_PROVIDER_URL"},
		{"no secret", refunds.HTTPConfig{URL: "https://pay.example.com"}, "REFUND_PROVIDER_SECRET"},
		{"blank secret", refunds.HTTPConfig{URL: "https://pay.example.com", Secret: "  "}, "REFUND_PROVIDER_SECRET"},
		{"negative timeout", refunds.HTTPConfig{URL: "https://pay.example.com", Secret: "s", Timeout: -time.Second}, "REFUND_PROVIDER_TIMEOUT"},
	} {
		_, err := refunds.NewHTTPProvider(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v, want an error naming %s (and no password)", tc.name, err, tc.says)
		}
	}
	for _, url := range []string{"https://pay.example.com", "http://127.0.0.1:8091", "http://localhost:8091/", "http://[::1]:1"} {
		if _, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: url, Secret: "s"}); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
}

// TestHTTPProvider_AgainstPaysimServe: the adapter against `paysim serve` in its own process.
func TestHTTPProvider_AgainstPaysimServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := refundsimtest.Start(t, "-secret", secret)
	p := provider(t, refunds.HTTPConfig{URL: base})
	first, err := p.Send(ctx, refund("evt-ps"))
	if err != nil || first.Ref == "" || first.Replayed {
		t.Fatalf("new refund: %+v %v", first, err)
	}
	if again, err := p.Send(ctx, refund("evt-ps")); err != nil || again != (refunds.Receipt{Ref: first.Ref, Replayed: true}) {
		t.Errorf("the same refund again: %+v %v", again, err)
	}
	rep, err := refundsim.Fetch(ctx, base, nil)
	if err != nil || len(rep.Refunds) != 1 || rep.Refunds[0].RefundID != first.Ref || rep.Refunds[0].Requests != 2 {
		t.Errorf("paysim serve's report: %+v %v", rep, err)
	}

	refusing := refundsimtest.Start(t, "-secret", "other,"+secret, "-refuse-share", "1")
	_, err = provider(t, refunds.HTTPConfig{URL: refusing}).Send(ctx, refund("evt-ps"))
	refusedWith(t, "paysim serve -refuse-share 1", err, refunds.CodeRefused)
}
