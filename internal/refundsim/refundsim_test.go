package refundsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

const secret = "sim-test-secret"

// sim starts a simulator with opts (Secrets defaulting to secret) behind an httptest server.
func sim(t *testing.T, opts refundsim.Options) (*refundsim.Server, string) {
	t.Helper()
	if opts.Secrets == nil {
		opts.Secrets = []string{secret}
	}
	s, err := refundsim.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return s, srv.URL
}

// answer is one HTTP answer of the simulator.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	refund  refunds.Answer
	problem refunds.Problem
}

// post sends body to base/v1/refunds with key as the Idempotency-Key and sig as the Refund-Signature (no
// header when empty).
func post(t *testing.T, c *http.Client, base, key string, body []byte, sig string) (answer, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+refunds.RefundsPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(refunds.IdempotencyKeyHeader, key)
	}
	if sig != "" {
		req.Header.Set(refunds.SignatureHeader, sig)
	}
	res, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: res.StatusCode, header: res.Header, body: b}
	if res.StatusCode < 300 {
		err = json.Unmarshal(b, &a.refund)
	} else {
		err = json.Unmarshal(b, &a.problem)
	}
	if err != nil {
		t.Errorf("answer %d is not the contract's JSON: %v: %s", res.StatusCode, err, b)
	}
	return a, nil
}

// send posts r signed with secret at now.
func send(t *testing.T, base string, r refunds.Refund) answer {
	t.Helper()
	body, _ := json.Marshal(r)
	a, err := post(t, http.DefaultClient, base, r.EventID, body, webhook.Sign(time.Now(), body, secret))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func refund(eventID string) refunds.Refund {
	return refunds.Refund{EventID: eventID, OrderID: "ord-" + eventID, AmountCents: 1999, Currency: "CNY"}
}

var refundID = regexp.MustCompile(`^re_[0-9a-f]{24}$`)

func TestRefund_NewThenReplayedThenMismatched(t *testing.T) {
	t.Parallel()
	at := time.Now().In(time.FixedZone("CST", 8*3600))
	s, base := sim(t, refundsim.Options{Now: func() time.Time { return at }})
	r := refund("evt-1")

	first := send(t, base, r)
	if first.status != http.StatusCreated || first.header.Get(refunds.ReplayedHeader) != "" {
		t.Fatalf("new refund: %d %v %s", first.status, first.header, first.body)
	}
	want := refunds.Answer{RefundID: first.refund.RefundID, EventID: "evt-1", OrderID: "ord-evt-1", AmountCents: 1999,
		Currency: "CNY", Status: refunds.StatusSucceeded, CreatedAt: at.UTC()}
	if !refundID.MatchString(first.refund.RefundID) || first.refund != want {
		t.Errorf("new refund answered %+v, want %+v with a re_<24 hex> id", first.refund, want)
	}
	if !strings.Contains(string(first.body), `"created_at":"`+at.UTC().Format(time.RFC3339Nano)+`"`) {
		t.Errorf("created_at is not RFC3339Nano UTC: %s", first.body)
	}

	again := send(t, base, r)
	if again.status != http.StatusOK || again.header.Get(refunds.ReplayedHeader) != "true" || !bytes.Equal(again.body, first.body) {
		t.Errorf("replay: %d %v %s, want 200, %s: true and the first body %s", again.status, again.header,
			again.body, refunds.ReplayedHeader, first.body)
	}

	for name, other := range map[string]refunds.Refund{
		"amount":   {EventID: "evt-1", OrderID: "ord-evt-1", AmountCents: 2000, Currency: "CNY"},
		"currency": {EventID: "evt-1", OrderID: "ord-evt-1", AmountCents: 1999, Currency: "USD"},
		"order":    {EventID: "evt-1", OrderID: "ord-other", AmountCents: 1999, Currency: "CNY"},
	} {
		a := send(t, base, other)
		if a.status != http.StatusConflict || a.problem.Code != refunds.CodeIdempotencyMismatch || a.problem.Reason == "" {
			t.Errorf("the key with another %s: %d %s, want 409 %s", name, a.status, a.body, refunds.CodeIdempotencyMismatch)
		}
	}

	rep := s.Report()
	if len(rep.Refunds) != 1 || rep.Refunds[0].Requests != 5 || rep.Refunds[0].RefundID != first.refund.RefundID {
		t.Errorf("report refunds %+v, want the one refund with 5 requests", rep.Refunds)
	}
	wantTotals := refundsim.Totals{Requests: 5, Executed: 1, Replays: 1, Mismatches: 3}
	if rep.Totals != wantTotals {
		t.Errorf("totals %+v, want %+v", rep.Totals, wantTotals)
	}
}

func TestRefund_SignatureRefusedRecordsNothing(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{Secrets: []string{"new-secret", secret}})
	r := refund("evt-sig")
	body, _ := json.Marshal(r)
	for _, tc := range []struct{ name, sig string }{
		{"missing", ""},
		{"stale", webhook.Sign(time.Now().Add(-10*time.Minute), body, secret)},
		{"wrong secret", webhook.Sign(time.Now(), body, "not-the-secret")},
		{"malformed", "t=1,v1=zz"},
		{"another body", webhook.Sign(time.Now(), []byte(`{}`), secret)},
	} {
		a, err := post(t, http.DefaultClient, base, r.EventID, body, tc.sig)
		if err != nil {
			t.Fatal(err)
		}
		if a.status != http.StatusUnauthorized || a.problem.Code != refunds.CodeInvalidSignature || a.problem.Reason == "" {
			t.Errorf("%s signature: %d %s, want 401 %s with a reason", tc.name, a.status, a.body, refunds.CodeInvalidSignature)
		}
	}
	rep := s.Report()
	if len(rep.Refunds) != 0 || len(rep.Refused) != 0 || rep.Totals != (refundsim.Totals{Requests: 5, BadSignature: 5}) {
		t.Errorf("refused signatures recorded something: %+v", rep)
	}
	// Either secret of a rotation is accepted.
	if a := send(t, base, r); a.status != http.StatusCreated {
		t.Errorf("signed with the second secret: %d %s", a.status, a.body)
	}
}

func TestRefund_BadRequestRecordsNothing(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{})
	for _, tc := range []struct{ name, key, body, field string }{
		{"not json", "evt-b", `{"event_id":`, "JSON"},
		{"unknown field", "evt-b", `{"event_id":"evt-b","order_id":"o","amount_cents":1,"currency":"CNY","tip":1}`, "tip"},
		{"empty event_id", "", `{"event_id":"","order_id":"o","amount_cents":1,"currency":"CNY"}`, "event_id"},
		{"missing order_id", "evt-b", `{"event_id":"evt-b","amount_cents":1,"currency":"CNY"}`, "order_id"},
		{"missing amount", "evt-b", `{"event_id":"evt-b","order_id":"o","currency":"CNY"}`, "amount_cents"},
		{"negative amount", "evt-b", `{"event_id":"evt-b","order_id":"o","amount_cents":-1,"currency":"CNY"}`, "amount_cents"},
		{"lower-case currency", "evt-b", `{"event_id":"evt-b","order_id":"o","amount_cents":1,"currency":"cny"}`, "currency"},
		{"long currency", "evt-b", `{"event_id":"evt-b","order_id":"o","amount_cents":1,"currency":"CNYY"}`, "currency"},
		{"key is not the event", "evt-other", `{"event_id":"evt-b","order_id":"o","amount_cents":1,"currency":"CNY"}`, "Idempotency-Key"},
		{"no key", "", `{"event_id":"evt-b","order_id":"o","amount_cents":1,"currency":"CNY"}`, "Idempotency-Key"},
	} {
		a, err := post(t, http.DefaultClient, base, tc.key, []byte(tc.body), webhook.Sign(time.Now(), []byte(tc.body), secret))
		if err != nil {
			t.Fatal(err)
		}
		if a.status != http.StatusBadRequest || a.problem.Code != refunds.CodeBadRequest || !strings.Contains(a.problem.Reason, tc.field) {
			t.Errorf("%s: %d %s, want 400 %s naming %s", tc.name, a.status, a.body, refunds.CodeBadRequest, tc.field)
		}
	}
	rep := s.Report()
	if len(rep.Refunds) != 0 || rep.Totals != (refundsim.Totals{Requests: 10, BadRequest: 10}) {
		t.Errorf("bad requests recorded something: %+v", rep)
	}
}

// TestRefund_ConcurrentSameKeyExecutesOnce: 50 requests with one key at once are one refund.
func TestRefund_ConcurrentSameKeyExecutesOnce(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{})
	const n = 50
	var wg sync.WaitGroup
	answers := make([]answer, n)
	for i := range n {
		wg.Go(func() { answers[i] = send(t, base, refund("evt-same")) })
	}
	wg.Wait()
	created, replays, ids := 0, 0, map[string]bool{}
	for _, a := range answers {
		switch a.status {
		case http.StatusCreated:
			created++
		case http.StatusOK:
			replays++
		default:
			t.Errorf("answer %d %s", a.status, a.body)
		}
		ids[a.refund.RefundID] = true
	}
	if created != 1 || replays != n-1 || len(ids) != 1 {
		t.Errorf("%d created, %d replays, %d refund IDs; want 1, %d, 1", created, replays, len(ids), n-1)
	}
	rep := s.Report()
	if len(rep.Refunds) != 1 || rep.Refunds[0].Requests != n || rep.Totals.Executed != 1 || rep.Totals.Replays != n-1 {
		t.Errorf("report %+v, want one refund of %d requests executed once", rep, n)
	}
}

func TestRefund_RefusedKeyStaysRefused(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{Faults: refundsim.Faults{RefuseShare: 1}})
	first := send(t, base, refund("evt-no"))
	if first.status != http.StatusUnprocessableEntity || first.problem.Code != refunds.CodeRefused || first.problem.Reason == "" {
		t.Fatalf("refuse share 1: %d %s, want 422 %s", first.status, first.body, refunds.CodeRefused)
	}
	if err := s.SetFaults(refundsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	again := send(t, base, refund("evt-no"))
	if again.status != http.StatusUnprocessableEntity || again.problem != first.problem {
		t.Errorf("the refused key once the share is 0: %d %s, want the same 422 %s", again.status, again.body, first.body)
	}
	if a := send(t, base, refund("evt-yes")); a.status != http.StatusCreated {
		t.Errorf("a new key once the share is 0: %d %s", a.status, a.body)
	}
	rep := s.Report()
	want := []refundsim.Refusal{{EventID: "evt-no", Code: refunds.CodeRefused, Reason: first.problem.Reason, Requests: 2}}
	if fmt.Sprint(rep.Refused) != fmt.Sprint(want) || len(rep.Refunds) != 1 || rep.Totals.Refused != 2 || rep.Totals.Executed != 1 {
		t.Errorf("report %+v, want refused %+v, one refund", rep, want)
	}
}

// TestRefund_RefuseShareIsPerKey: a share refuses the same keys in every simulator (another process, another
// seed), so a retry never turns a refusal into a refund.
func TestRefund_RefuseShareIsPerKey(t *testing.T) {
	t.Parallel()
	refusedBy := func(seed int64) map[string]bool {
		_, base := sim(t, refundsim.Options{Faults: refundsim.Faults{RefuseShare: 0.5}, Seed: seed})
		out := map[string]bool{}
		for i := range 40 {
			id := fmt.Sprintf("evt-%d", i)
			out[id] = send(t, base, refund(id)).status == http.StatusUnprocessableEntity
		}
		return out
	}
	a, b := refusedBy(1), refusedBy(2)
	n := 0
	for id, refused := range a {
		if b[id] != refused {
			t.Errorf("%s refused by one simulator (%v) and not the other", id, refused)
		}
		if refused {
			n++
		}
	}
	if n == 0 || n == len(a) {
		t.Errorf("share 0.5 refused %d of %d keys", n, len(a))
	}
}

func TestRefund_FailShareExecutesNothing(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{Faults: refundsim.Faults{FailShare: 1}})
	a := send(t, base, refund("evt-f"))
	if a.status != http.StatusServiceUnavailable || a.problem.Code != refunds.CodeUnavailable || a.header.Get("Retry-After") != "1" {
		t.Errorf("fail share 1: %d %v %s, want 503 %s with Retry-After: 1", a.status, a.header, a.body, refunds.CodeUnavailable)
	}
	rep := s.Report()
	if len(rep.Refunds) != 0 || rep.Totals != (refundsim.Totals{Requests: 1, Failed: 1}) {
		t.Errorf("a failed request recorded %+v", rep)
	}
}

// TestRefund_TimeoutExecutesAndLosesTheAnswer: the refund is executed, the client hears nothing, a retry
// replays it.
func TestRefund_TimeoutExecutesAndLosesTheAnswer(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{Faults: refundsim.Faults{TimeoutShare: 1}})
	r := refund("evt-t")
	body, _ := json.Marshal(r)
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	if a, err := post(t, impatient, base, r.EventID, body, webhook.Sign(time.Now(), body, secret)); err == nil {
		t.Fatalf("timeout share 1 answered %d %s", a.status, a.body)
	}
	rep := s.Report()
	if len(rep.Refunds) != 1 || rep.Totals.Executed != 1 || rep.Totals.TimedOut != 1 {
		t.Fatalf("the timed-out refund was not executed: %+v", rep)
	}
	if err := s.SetFaults(refundsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	a := send(t, base, r)
	if a.status != http.StatusOK || a.refund.RefundID != rep.Refunds[0].RefundID {
		t.Errorf("the retry: %d %s, want the replay of %s", a.status, a.body, rep.Refunds[0].RefundID)
	}
}

func TestRefund_BlackholeHoldsWithoutExecuting(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{})
	r := refund("evt-bh")
	body, _ := json.Marshal(r)

	s.Blackhole(time.Hour)
	start := time.Now()
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	if a, err := post(t, impatient, base, r.EventID, body, webhook.Sign(time.Now(), body, secret)); err == nil {
		t.Fatalf("a blackhole answered %d %s", a.status, a.body)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("the client gave up after %s, before its timeout", d)
	}

	// A client that waits hears 503 when the blackhole ends.
	s.Blackhole(200 * time.Millisecond)
	if a := send(t, base, r); a.status != http.StatusServiceUnavailable || a.problem.Code != refunds.CodeUnavailable {
		t.Errorf("at the blackhole's end: %d %s, want 503", a.status, a.body)
	}
	rep := s.Report()
	if len(rep.Refunds) != 0 || rep.Totals != (refundsim.Totals{Requests: 2, Blackholed: 2}) {
		t.Errorf("a blackhole recorded %+v", rep)
	}
	if a := send(t, base, r); a.status != http.StatusCreated {
		t.Errorf("after the blackhole: %d %s", a.status, a.body)
	}
}

// TestClose_ReleasesHeldRequests: a server shutting down does not wait out a blackhole.
func TestClose_ReleasesHeldRequests(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{})
	s.Blackhole(time.Hour)
	done := make(chan answer)
	go func() { done <- send(t, base, refund("evt-c")) }()
	for s.Report().Totals.Blackholed == 0 {
		time.Sleep(time.Millisecond) // polls the condition: the request is held
	}
	s.Close()
	select {
	case a := <-done:
		if a.status != http.StatusServiceUnavailable {
			t.Errorf("released: %d %s, want 503", a.status, a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the held request")
	}
}

func TestFaults_Validated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f     refundsim.Faults
		field string
	}{
		{refundsim.Faults{FailShare: 1.5}, "fail_share"},
		{refundsim.Faults{TimeoutShare: -0.1}, "timeout_share"},
		{refundsim.Faults{RefuseShare: math.NaN()}, "refuse_share"},
	} {
		if _, err := refundsim.New(refundsim.Options{Secrets: []string{secret}, Faults: tc.f}); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New with %+v: %v, want an error naming %s", tc.f, err, tc.field)
		}
		s, _ := refundsim.New(refundsim.Options{Secrets: []string{secret}})
		if err := s.SetFaults(tc.f); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("SetFaults(%+v): %v, want an error naming %s", tc.f, err, tc.field)
		}
	}
	for _, secrets := range [][]string{nil, {""}, {secret, " "}} {
		if _, err := refundsim.New(refundsim.Options{Secrets: secrets}); err == nil || !strings.Contains(err.Error(), "Secrets") {
			t.Errorf("New with secrets %q: %v, want an error naming Secrets", secrets, err)
		}
	}
}

func TestFaultsAPI(t *testing.T) {
	t.Parallel()
	s, base := sim(t, refundsim.Options{})
	ctx := context.Background()
	want := refundsim.Faults{FailShare: 0.25, TimeoutShare: 0.5, RefuseShare: 0.125}
	if err := refundsim.PutFaults(ctx, base, want, time.Hour, nil); err != nil {
		t.Fatalf("PutFaults: %v", err)
	}
	if got := s.Faults(); got.Faults != want || got.BlackholeSeconds < 3590 || got.BlackholeSeconds > 3600 {
		t.Errorf("after PutFaults: %+v, want %+v and a blackhole of about an hour", got, want)
	}
	res, err := http.Get(base + "/v1/sim/faults")
	if err != nil {
		t.Fatal(err)
	}
	var got refundsim.Settings
	err = json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || got.Faults != want || got.BlackholeSeconds < 3590 {
		t.Errorf("GET /v1/sim/faults: %d %+v %v", res.StatusCode, got, err)
	}
	// PUT sets every setting: no blackhole_seconds ends the blackhole.
	if err := refundsim.PutFaults(ctx, base, refundsim.Faults{}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Faults(); got != (refundsim.Settings{}) {
		t.Errorf("after PutFaults of nothing: %+v", got)
	}

	if err := refundsim.PutFaults(ctx, base, refundsim.Faults{RefuseShare: 2}, 0, nil); err == nil || !strings.Contains(err.Error(), "refuse_share") {
		t.Errorf("PutFaults with refuse share 2: %v, want an error naming refuse_share", err)
	}
	for body, field := range map[string]string{
		`{"fail_share":"x"}`:         "fail_share",
		`{"fail_shares":0.1}`:        "fail_shares",
		`{"blackhole_seconds":-1}`:   "blackhole_seconds",
		`{"timeout_share":1.01}`:     "timeout_share",
		`{"blackhole_seconds":1e12}`: "blackhole_seconds",
	} {
		req, _ := http.NewRequest(http.MethodPut, base+"/v1/sim/faults", strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p refunds.Problem
		err = json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || err != nil || p.Code != refunds.CodeBadRequest || !strings.Contains(p.Reason, field) {
			t.Errorf("PUT %s: %d %+v, want 400 naming %s", body, res.StatusCode, p, field)
		}
	}
	if got := s.Faults(); got != (refundsim.Settings{}) {
		t.Errorf("refused PUTs changed the faults: %+v", got)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	_, base := sim(t, refundsim.Options{})
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/v1/nothing", http.StatusNotFound, ""},
		{http.MethodPost, "/v1/refunds/evt-1", http.StatusNotFound, ""},
		{http.MethodDelete, "/v1/refunds", http.StatusMethodNotAllowed, "GET, POST"},
		{http.MethodPost, "/v1/sim/faults", http.StatusMethodNotAllowed, "GET, PUT"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p refunds.Problem
		err = json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
		if res.StatusCode != tc.status || err != nil || p.Code == "" || p.Reason == "" || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q %+v (%v), want %d Allow %q and a JSON problem", tc.method, tc.path,
				res.StatusCode, res.Header.Get("Allow"), p, err, tc.status, tc.allow)
		}
	}
}

// TestReport_FiguresAndOrder: the report over HTTP (Fetch) counts every answer and lists refunds by
// created_at, then event_id.
func TestReport_FiguresAndOrder(t *testing.T) {
	t.Parallel()
	clock := struct {
		sync.Mutex
		t time.Time
	}{t: time.Now()}
	now := func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		return clock.t
	}
	s, base := sim(t, refundsim.Options{Now: now})
	send(t, base, refund("evt-c"))
	clock.Lock()
	clock.t = clock.t.Add(time.Second)
	clock.Unlock()
	send(t, base, refund("evt-b"))
	send(t, base, refund("evt-a"))
	send(t, base, refund("evt-a"))
	send(t, base, refunds.Refund{EventID: "evt-a", OrderID: "ord-evt-a", AmountCents: 1, Currency: "CNY"})
	if err := s.SetFaults(refundsim.Faults{RefuseShare: 1}); err != nil {
		t.Fatal(err)
	}
	send(t, base, refund("evt-x"))
	send(t, base, refund("evt-b")) // executed before the share: still a replay
	if err := s.SetFaults(refundsim.Faults{FailShare: 1}); err != nil {
		t.Fatal(err)
	}
	send(t, base, refund("evt-a"))
	body := []byte(`{}`)
	if _, err := post(t, http.DefaultClient, base, "evt-z", body, "t=1,v1=00"); err != nil {
		t.Fatal(err)
	}
	if _, err := post(t, http.DefaultClient, base, "evt-z", body, webhook.Sign(time.Now(), body, secret)); err != nil {
		t.Fatal(err)
	}

	rep, err := refundsim.Fetch(context.Background(), base+"/", nil)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	var order []string
	requests := map[string]int{}
	for _, e := range rep.Refunds {
		order = append(order, e.EventID)
		requests[e.EventID] = e.Requests
		if !refundID.MatchString(e.RefundID) || e.OrderID != "ord-"+e.EventID || e.AmountCents != 1999 || e.Currency != "CNY" {
			t.Errorf("entry %+v", e)
		}
	}
	if fmt.Sprint(order) != "[evt-c evt-a evt-b]" {
		t.Errorf("refunds in order %v, want [evt-c evt-a evt-b] (created_at, then event_id)", order)
	}
	if fmt.Sprint(requests) != "map[evt-a:4 evt-b:2 evt-c:1]" {
		t.Errorf("requests per refund %v", requests)
	}
	if len(rep.Refused) != 1 || rep.Refused[0].EventID != "evt-x" || rep.Refused[0].Requests != 1 {
		t.Errorf("refused %+v", rep.Refused)
	}
	want := refundsim.Totals{Requests: 10, Executed: 3, Replays: 2, Refused: 1, Mismatches: 1, Failed: 1, BadSignature: 1, BadRequest: 1}
	if rep.Totals != want {
		t.Errorf("totals %+v, want %+v", rep.Totals, want)
	}
	if fmt.Sprint(rep) != fmt.Sprint(s.Report()) {
		t.Errorf("Fetch answered %+v, Report %+v", rep, s.Report())
	}

	res, err := http.Get(base + refunds.RefundsPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, name := range []string{`"refunds":[`, `"refused":[`, `"totals":{`, `"refund_id":`, `"event_id":`, `"order_id":`,
		`"amount_cents":`, `"currency":`, `"created_at":`, `"requests":`, `"timed_out":0`, `"bad_signature":1`, `"bad_request":1`,
		`"mismatches":1`, `"blackholed":0`, `"replays":2`, `"executed":3`, `"failed":1`, `"code":"refused"`, `"reason":`} {
		if !strings.Contains(string(raw), name) {
			t.Errorf("the report's JSON lacks %s: %s", name, raw)
		}
	}
}

func TestFetch_Errors(t *testing.T) {
	t.Parallel()
	_, base := sim(t, refundsim.Options{})
	if _, err := refundsim.Fetch(context.Background(), base+"/nowhere", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch of a wrong base: %v, want an error naming 404", err)
	}
}
