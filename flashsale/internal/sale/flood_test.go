package sale_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
)

// floodFake is a fake of the order API for the flood pair: PUT /v1/inventory keeps the stock, and POST
// /v1/orders answers 409 sold-out at once for a SKU of stock 0, else 201 after winnerDelay. Every hangEvery-th
// order of an in-stock SKU (from the hangFrom-th) never gets an answer within the client's timeout, and every
// unavailEvery-th one is answered 503 unavailable (a documented answer, not a lost one).
type floodFake struct {
	winnerDelay            time.Duration
	hangFrom, hangEvery    int64
	unavailEvery           int64
	mu                     sync.Mutex
	stock                  map[string]int64
	keys, users            map[string]bool
	dupKeys                int
	winners, hung, unavail atomic.Int64
	soldOut                atomic.Int64
	winnerSKUs             map[string]int64
	releaseHung            chan struct{}
	releaseOnce            sync.Once
}

func newFloodFake() *floodFake {
	return &floodFake{stock: map[string]int64{}, keys: map[string]bool{}, users: map[string]bool{},
		winnerSKUs: map[string]int64{}, releaseHung: make(chan struct{})}
}

func (f *floodFake) problem(w http.ResponseWriter, status int, kind string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"https://ordersaga.dev/problems/%s","title":"%s","status":%d}`, kind, kind, status)
}

func (f *floodFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v1/inventory/"):
		if r.Header.Get("Authorization") != "Bearer "+testAdmin {
			f.problem(w, http.StatusUnauthorized, "unauthorized")
			return
		}
		var req struct {
			Stock      int64 `json:"stock"`
			PriceCents int64 `json:"price_cents"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		sku := strings.TrimPrefix(r.URL.Path, "/v1/inventory/")
		f.mu.Lock()
		f.stock[sku] = req.Stock
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(ordersaga.InventoryBody{SKU: sku, DBStock: req.Stock, PriceCents: req.PriceCents})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/orders":
		var req struct {
			UserID string           `json:"user_id"`
			Lines  []ordersaga.Line `json:"lines"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Lines) != 1 {
			f.problem(w, http.StatusBadRequest, "invalid-body")
			return
		}
		key, sku := r.Header.Get("Idempotency-Key"), req.Lines[0].SKU
		f.mu.Lock()
		if f.keys[key] || f.users[req.UserID] {
			f.dupKeys++
		}
		f.keys[key], f.users[req.UserID] = true, true
		stock, known := f.stock[sku]
		f.mu.Unlock()
		switch {
		case !known:
			f.problem(w, http.StatusNotFound, "unknown-sku")
		case stock == 0:
			f.soldOut.Add(1)
			f.problem(w, http.StatusConflict, "sold-out")
		default:
			n := f.winners.Add(1)
			f.mu.Lock()
			f.winnerSKUs[sku]++
			f.mu.Unlock()
			if f.hangEvery > 0 && n >= f.hangFrom && n%f.hangEvery == 0 {
				f.hung.Add(1)
				select { // past the client's timeout: the winner gets no answer
				case <-r.Context().Done():
				case <-f.releaseHung:
				}
				return
			}
			time.Sleep(f.winnerDelay)
			if f.unavailEvery > 0 && n%f.unavailEvery == 1 {
				f.unavail.Add(1)
				w.Header().Set("Retry-After", "1")
				f.problem(w, http.StatusServiceUnavailable, "unavailable")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(ordersaga.Order{OrderID: fmt.Sprintf("o-%d", n), UserID: req.UserID,
				Status: "AWAITING_PAYMENT", Lines: req.Lines})
		}
	default:
		f.problem(w, http.StatusNotFound, "not-found")
	}
}

func floodConfig(t *testing.T, url string) sale.Config {
	t.Helper()
	cfg := sale.DefaultConfig()
	cfg.Target, cfg.AdminToken, cfg.WebhookSecret = url, testAdmin, ""
	cfg.FloodPair, cfg.FloodX, cfg.FloodMinRate, cfg.FloodInflight = true, 3, 10, 256
	cfg.Concurrency, cfg.Duration, cfg.FloodWarmup = 4, 1500*time.Millisecond, 300*time.Millisecond
	cfg.RequestTimeout, cfg.ProgressEvery = 400*time.Millisecond, time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFloodPairPhasesRatesAndCounts runs the flood pair against the fake: phase 1 has only winners, phase 2
// the same winners on a fresh SKU and the flood at FloodX times phase 1's accepted rate; every request has its
// own key and user; the accepted, sold-out, error and lost answers are counted where they belong, and the FLOOD
// line carries them.
func TestFloodPairPhasesRatesAndCounts(t *testing.T) {
	fake := newFloodFake()
	// 4 winners: at most ~100 orders/s, so a flood of ~300/s that a race-instrumented run on a busy machine
	// still answers well within the request timeout.
	fake.winnerDelay = 40 * time.Millisecond
	fake.unavailEvery = 40
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := floodConfig(t, srv.URL)
	cfg.RequestTimeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress strings.Builder
	// The process's CPU as the tool reads it: each reading a second more than the last, so each phase (read at
	// its start and its end) spent one.
	var cpuReads atomic.Int64
	cpu := func() (time.Duration, bool) { return time.Duration(cpuReads.Add(1)) * time.Second, true }
	res, err := sale.FloodPair(ctx, cfg, sale.Options{Progress: &syncWriter{w: &progress}, CPU: cpu})
	if err != nil {
		t.Fatal(err)
	}
	var sum strings.Builder
	res.WriteSummary(&sum)
	t.Logf("\n%s", sum.String())

	n, f := res.NoFlood, res.Flood
	if cpuReads.Load() != 4 {
		t.Errorf("the CPU was read %d times, want at the start and the end of each phase", cpuReads.Load())
	}
	for _, p := range []sale.FloodPhase{n, f} {
		if p.ToolCPU == nil || p.ToolCPU.Seconds != 1 || p.ToolCPU.Requests != p.WinnerRequests+p.FloodSent {
			t.Errorf("%s: tool CPU %+v, want 1 s over %d requests", p.Name, p.ToolCPU, p.WinnerRequests+p.FloodSent)
		}
		if want := fmt.Sprintf("  %-8s the tool itself: 1.0 s of CPU", p.Name); !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if n.FloodSent != 0 || n.SoldOut != 0 || n.FloodRate != 0 {
		t.Errorf("phase 1 had a flood: %+v", n)
	}
	if n.Accepted == 0 || f.Accepted == 0 {
		t.Fatalf("accepted %d without the flood, %d with it", n.Accepted, f.Accepted)
	}
	// The window counts only its answers: no more than the winners can give in it.
	if max := float64(cfg.Concurrency) * cfg.Duration.Seconds() / fake.winnerDelay.Seconds(); float64(n.Accepted) > max*1.05 {
		t.Errorf("%d accepted in a %s window, at most %.0f possible", n.Accepted, cfg.Duration, max)
	}
	if want := cfg.FloodX * n.AcceptedRate(); math.Abs(f.FloodRate-want) > 1e-9 {
		t.Errorf("flood rate %.1f/s, want %g × %.1f/s = %.1f/s", f.FloodRate, cfg.FloodX, n.AcceptedRate(), want)
	}
	if got := f.OfferedRate(); math.Abs(got-f.FloodRate)/f.FloodRate > 0.1 {
		t.Errorf("flood offered at %.1f/s, asked %.1f/s", got, f.FloodRate)
	}
	// Rates in a window depend on how fast the machine running the test is (under the race detector on a busy
	// machine the fake answers late, and the tool skips at its in-flight cap): only their counts are exact.
	if got := f.SoldOutRate(); got <= 0 {
		t.Errorf("sold-out answers %.1f/s in the window, asked %.1f/s", got, f.FloodRate)
	}
	if f.FloodErrors != 0 {
		t.Errorf("flood errors %d, want 0 (skipped %d at the in-flight cap)", f.FloodErrors, f.FloodSkipped)
	}
	if f.FloodSent+1 != fake.soldOut.Load() { // + the probe before phase 1
		t.Errorf("flood sent %d, the fake answered %d sold out (with the probe)", f.FloodSent, fake.soldOut.Load())
	}
	if got, want := n.WinnerRequests+f.WinnerRequests, fake.winners.Load(); got != want {
		t.Errorf("winner requests %d, the fake saw %d", got, want)
	}
	if got, want := n.Errors+f.Errors, fake.unavail.Load(); got != want || want == 0 {
		t.Errorf("errors %d, the fake answered %d 503s", got, want)
	}
	if res.Lost() != 0 || n.Timeouts+f.Timeouts != 0 {
		t.Errorf("lost %d, timeouts %d: every winner was answered", res.Lost(), n.Timeouts+f.Timeouts)
	}
	fake.mu.Lock()
	if fake.dupKeys != 0 {
		t.Errorf("%d requests reused a key or a user", fake.dupKeys)
	}
	if len(fake.winnerSKUs) != 2 || fake.winnerSKUs[n.SKU] != n.WinnerRequests || fake.winnerSKUs[f.SKU] != f.WinnerRequests {
		t.Errorf("winner SKUs %v: want phase 1 on %s, phase 2 on %s", fake.winnerSKUs, n.SKU, f.SKU)
	}
	fake.mu.Unlock()
	// The ratio is the flood phase's accepted rate over the first phase's (how much the flood slows the winners
	// depends on the machine the test runs on, so only the arithmetic is checked).
	if want := f.AcceptedRate() / n.AcceptedRate(); math.Abs(res.Ratio()-want) > 1e-9 {
		t.Errorf("ratio %.4f, want %.1f/s over %.1f/s = %.4f", res.Ratio(), f.AcceptedRate(), n.AcceptedRate(), want)
	}
	line := res.Line()
	for _, want := range []string{"FLOOD accepted_no_flood=", " accepted_flood=", " ratio=", " target=80%", " flood_offered=",
		" flood_answered=", " soldout_p50=", " soldout_p99=", " accepted_p99_flood=", " lost=0 ", fmt.Sprintf(" errors=%d ", fake.unavail.Load()),
		fmt.Sprintf(" tool_cpu_no_flood=%.1f%%", n.ToolCPU.Share(n.Fired.Seconds())*100), " tool_cpu_flood="} {
		if !strings.Contains(line, want) {
			t.Errorf("FLOOD line lacks %q: %s", want, line)
		}
	}
	if !strings.Contains(sum.String(), line) || !strings.Contains(progress.String(), "flood done") {
		t.Errorf("summary or progress incomplete:\n%s\n%s", sum.String(), progress.String())
	}
}

// TestFloodPairCountsLostAnswers: winners whose request is never answered (past the client's timeout) are
// lost, in the phase where they were sent.
func TestFloodPairCountsLostAnswers(t *testing.T) {
	fake := newFloodFake()
	fake.winnerDelay = 5 * time.Millisecond
	fake.hangFrom, fake.hangEvery = 1, 25
	srv := httptest.NewServer(fake)
	defer func() {
		fake.releaseOnce.Do(func() { close(fake.releaseHung) })
		srv.Close()
	}()
	cfg := floodConfig(t, srv.URL)
	cfg.Duration = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sale.FloodPair(ctx, cfg, sale.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, f := res.NoFlood, res.Flood
	if n.Lost == 0 || f.Lost == 0 {
		t.Errorf("lost %d without the flood, %d with it: want some in each", n.Lost, f.Lost)
	}
	if got, want := res.Lost(), fake.hung.Load(); got != want {
		t.Errorf("lost %d, the fake left %d unanswered", got, want)
	}
	if n.Timeouts != n.Lost || f.Timeouts != f.Lost {
		t.Errorf("timeouts %d/%d, lost %d/%d: every lost one timed out", n.Timeouts, f.Timeouts, n.Lost, f.Lost)
	}
	if n.ErrorKinds["winner lost timeout"] != n.Lost {
		t.Errorf("error kinds %v", n.ErrorKinds)
	}
	if !strings.Contains(res.Line(), fmt.Sprintf(" lost=%d ", fake.hung.Load())) {
		t.Errorf("FLOOD line: %s", res.Line())
	}
}

// TestFloodPairRefusesAStackWithoutSoldOut: a stack that does not answer sold out for a SKU of stock 0 is
// refused before any phase (the flood would measure something else).
func TestFloodPairRefusesAStackWithoutSoldOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			_ = json.NewEncoder(w).Encode(ordersaga.InventoryBody{})
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"order_id":"o-1"}`))
	}))
	defer srv.Close()
	cfg := floodConfig(t, srv.URL)
	_, err := sale.FloodPair(context.Background(), cfg, sale.Options{})
	if err == nil || !strings.Contains(err.Error(), "sold-out") {
		t.Fatalf("err %v: want the probe's refusal", err)
	}
}

func TestFloodConfigValidates(t *testing.T) {
	cfg := sale.DefaultConfig()
	cfg.AdminToken, cfg.FloodPair = "x", true // no webhook secret: the flood pair pays nothing
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.FloodX, cfg.FloodInflight, cfg.FloodWarmup, cfg.Rate = 0, 0, -time.Second, 10
	err := cfg.Validate()
	for _, want := range []string{"--flood-x 0", "--flood-inflight 0", "--flood-warmup -1s", "--rate 10"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// syncWriter serialises writes of the phases' goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
