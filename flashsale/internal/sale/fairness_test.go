package sale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const leadUS = int64(OvertakeLead / time.Microsecond)

// ms is a time in µs from a number of milliseconds.
func msUS(v int64) int64 { return v * 1000 }

func TestOvertakes(t *testing.T) {
	cases := []struct {
		name           string
		winners        []stint
		losers         []stint
		n, pairs, most int64
	}{
		{"none: no loser", []stint{{0, msUS(500)}}, nil, 0, 0, 0},
		{"none: every loser answered before the winner was placed",
			[]stint{{msUS(300), msUS(900)}}, []stint{{0, msUS(800)}, {msUS(100), msUS(900)}}, 0, 0, 0},
		{"one clear overtake", []stint{{msUS(1000), msUS(1500)}}, []stint{{0, msUS(4000)}}, 1, 1, msUS(1000)},
		{"within 100 ms: not counted", []stint{{msUS(1000), msUS(1500)}}, []stint{{msUS(901), msUS(4000)}}, 0, 0, 0},
		{"exactly 100 ms earlier: counted", []stint{{msUS(1000), msUS(1500)}}, []stint{{msUS(900), msUS(4000)}}, 1, 1, msUS(100)},
		{"a loser that arrived after the winner: not counted", []stint{{msUS(1000), msUS(1500)}}, []stint{{msUS(1200), msUS(4000)}}, 0, 0, 0},
		{"two winners, three losers",
			[]stint{{msUS(1000), msUS(2000)}, {msUS(1050), msUS(5000)}},
			[]stint{{0, msUS(3000)}, {msUS(500), msUS(6000)}, {msUS(990), msUS(9000)}},
			// w1 (placed at 2 s) overtook l1 and l2 (l3 arrived within 100 ms); w2 (placed at 5 s) overtook l2 only.
			2, 3, msUS(1000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, pairs, most := overtakes(c.winners, c.losers, leadUS)
			if n != c.n || pairs != c.pairs || most != c.most {
				t.Errorf("overtakes = %d, %d pairs, most lead %d µs; want %d, %d, %d", n, pairs, most, c.n, c.pairs, c.most)
			}
		})
	}
}

// TestOvertakesAgainstTheDefinition checks the O(n log n) count against the definition, pair by pair.
func TestOvertakesAgainstTheDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 200 {
		var ws, ls []stint
		for range rng.IntN(40) {
			a := rng.Int64N(3_000_000)
			ws = append(ws, stint{a, a + rng.Int64N(2_000_000)})
		}
		for range rng.IntN(40) {
			a := rng.Int64N(3_000_000)
			ls = append(ls, stint{a, a + rng.Int64N(4_000_000)})
		}
		var n, pairs, most int64
		for _, w := range ws {
			hit := false
			for _, b := range ls {
				if b.arrived <= w.arrived-leadUS && b.answered > w.answered {
					pairs++
					hit = true
					most = max(most, w.arrived-b.arrived)
				}
			}
			if hit {
				n++
			}
		}
		gn, gp, gm := overtakes(ws, ls, leadUS)
		if gn != n || gp != pairs || gm != most {
			t.Fatalf("round %d: overtakes %d, %d pairs, most %d; by the definition %d, %d, %d", round, gn, gp, gm, n, pairs, most)
		}
	}
}

// TestJudgeFairness: the figures of a hand-built buyer log, per SKU, and the overtakes judged on demand.
func TestJudgeFairness(t *testing.T) {
	bl := &BuyerLog{Groups: []BuyerGroup{
		// SKU A: a buyer arrived at 0 waited (two 503s, 2 s) and was told sold out at 5 s; a winner arrived at 1 s
		// and was placed at 1.5 s: one overtake. The sold-out answer at 5 s makes the SKU sold out then; a buyer
		// arriving at 6 s told sold out 10 ms later is a late sold-out.
		{SKU: "A", Outcome: BuyerPlaced, ArrivedUS: []int64{msUS(1000)}, AnsweredUS: []int64{msUS(1500)},
			FirstWaitUS: []int64{-1}, WaitedUS: []int64{0}, Waits: []int64{0}},
		{SKU: "A", Outcome: BuyerSoldOut, ArrivedUS: []int64{0, msUS(6000)}, AnsweredUS: []int64{msUS(5000), msUS(6010)},
			FirstWaitUS: []int64{msUS(1), -1}, WaitedUS: []int64{msUS(2000), 0}, Waits: []int64{2, 0}},
		// SKU B: a buyer arrived at 0 left at 60 s; the winner of B arrived at 50 ms (within the lead): none.
		{SKU: "B", Outcome: BuyerGaveUp, ArrivedUS: []int64{0}, AnsweredUS: []int64{msUS(60000)},
			FirstWaitUS: []int64{msUS(2)}, WaitedUS: []int64{msUS(59000)}, Waits: []int64{12}},
		{SKU: "B", Outcome: BuyerPlaced, ArrivedUS: []int64{msUS(50)}, AnsweredUS: []int64{msUS(7000)},
			FirstWaitUS: []int64{msUS(51)}, WaitedUS: []int64{msUS(6000)}, Waits: []int64{3}},
	}}
	f := judgeFairness(bl)
	if f.Buyers != 5 || f.Placed != 2 || f.SoldOut != 2 || f.GaveUp != 1 || f.Errors != 0 {
		t.Errorf("buyers %+v", f)
	}
	if f.Overtakes != 1 || f.OvertakePairs != 1 || f.BySKU["A"] != 1 || f.BySKU["B"] != 0 || f.MostLeadMS != 1000 {
		t.Errorf("overtakes %d (%d pairs, by SKU %v, most lead %.0f ms), want 1 on A, 1000 ms", f.Overtakes, f.OvertakePairs, f.BySKU, f.MostLeadMS)
	}
	if f.Winners.Count != 2 || f.Winners.P50MS != 500 || f.Winners.P99MS != 6950 {
		t.Errorf("winners from first arrival %+v, want 2, p50 500 ms, p99 6950 ms", f.Winners)
	}
	if f.LateSoldOut.Count != 1 || f.LateSoldOut.P99MS != 10 {
		t.Errorf("late sold out %+v, want 1 at 10 ms", f.LateSoldOut)
	}
	if f.Waits503 != 17 || f.BuyersWaited != 3 || f.WaitedSeconds != 67 || f.Waited.MaxMS != 59000 {
		t.Errorf("waits %d by %d buyers, %.1f s, %+v", f.Waits503, f.BuyersWaited, f.WaitedSeconds, f.Waited)
	}
	if f.Failed() {
		t.Error("overtakes failed the verdict without --max-overtakes")
	}
	met := map[string]bool{}
	for _, x := range f.Targets {
		met[x.Name] = x.Met
	}
	if met["overtakes"] || met["winners p99 from first arrival"] || !met["sold out after the SKU sold out, p99"] {
		t.Errorf("targets %+v", f.Targets)
	}

	// Judged: a bound of 1 passes, 0 fails the verdict with a finding.
	for bound, fails := range map[int64]bool{1: false, 0: true} {
		b := bound
		bl.MaxOvertakes = &b
		v := Check(Snapshot{Quiet: true, Buyers: bl})
		if v.OK() == fails || v.Fairness == nil || v.Fairness.Failed() != fails {
			t.Errorf("--max-overtakes %d: OK=%v, failed=%v; want failed=%v", bound, v.OK(), v.Fairness.Failed(), fails)
		}
		found := false
		for _, x := range v.Findings {
			found = found || x.Check == CheckOvertakes
		}
		if found != fails {
			t.Errorf("--max-overtakes %d: overtakes finding %v, want %v", bound, found, fails)
		}
	}
}

// TestLine: the line's length over time from the visits.
func TestLine(t *testing.T) {
	bl := &BuyerLog{Groups: []BuyerGroup{{SKU: "A", Outcome: BuyerSoldOut,
		ArrivedUS: []int64{0, msUS(100), msUS(250)}, AnsweredUS: []int64{msUS(350), msUS(150), msUS(500)},
		FirstWaitUS: []int64{msUS(50), -1, -1}, WaitedUS: []int64{msUS(250), 0, 0}, Waits: []int64{1, 0, 0}}}}
	got := bl.Line(2)
	want := []LinePoint{{2, 1, 0}, {2.1, 2, 1}, {2.2, 1, 1}, {2.3, 2, 1}, {2.4, 1, 0}, {2.5, 0, 0}, {2.6, 0, 0}}
	if len(got) != len(want) {
		t.Fatalf("line %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Waiting != want[i].Waiting || got[i].ToldToWait != want[i].ToldToWait || fmt.Sprintf("%.1f", got[i].T) != fmt.Sprintf("%.1f", want[i].T) {
			t.Errorf("line %v, want %v", got, want)
			break
		}
	}
}

// lineServer answers POST /v1/orders with the given answers in turn (the last one for ever after), and
// records each request's key and body.
type lineServer struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	keys    []string
	bodies  []string
}

func (s *lineServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	s.mu.Lock()
	s.keys = append(s.keys, req.Header.Get("Idempotency-Key"))
	s.bodies = append(s.bodies, string(body))
	answer := s.answers[min(len(s.keys), len(s.answers))-1]
	s.mu.Unlock()
	answer(w)
}

func unavailable(retryAfter string, position int) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", retryAfter)
		if position >= 0 {
			w.Header().Set("Queue-Position", fmt.Sprint(position))
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"https://ordersaga.example/problems/unavailable","title":"Unavailable","status":503}`)
	}
}

func placed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprint(w, `{"order_id":"ord-1","user_id":"u","status":"AWAITING_PAYMENT","lines":[{"sku":"A","qty":1,"unit_price_cents":100}],"amount_cents":100,"pay_by":"2030-01-01T00:00:00Z"}`)
}

// lineRunner is a Runner with just what a buyer needs, against url; every accepted order is left to expire.
func lineRunner(t *testing.T, url string, patience time.Duration) *Runner {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Target, cfg.AdminToken, cfg.Patience, cfg.DuplicateRatio = url, "x", patience, 0
	cfg.PayRatio, cfg.CancelRatio, cfg.LatePayRatio = 0, 0, 0
	cfg.SKUPrefix = "A"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: cfg, opts: Options{}.withDefaults(), c: NewClient(url, "x", "", 4, 10*time.Second),
		skus: []string{"A"}, httpSem: make(chan struct{}, 4), orders: map[string]*OrderSnapshot{}, byKey: map[string][]string{},
		payments: map[string]*PaymentSnapshot{}, samples: map[string][]StockPoint{}}
	t.Cleanup(r.c.Close)
	r.stats = NewStats(time.Now())
	r.places = newPlaceLog()
	r.buyers = newBuyerLog(r.places.from, patience, -1)
	r.follow, r.stopFollow = context.WithCancel(context.Background())
	t.Cleanup(r.stopFollow)
	return r
}

// TestBuyerWaitsAsRetryAfterSays: answered 503 Retry-After: 1 twice, the buyer waits about a second each time
// and comes back with the same key and body, and is placed: two waits, no error, its latency from its first
// arrival.
func TestBuyerWaitsAsRetryAfterSays(t *testing.T) {
	t.Parallel()
	s := &lineServer{answers: []func(http.ResponseWriter){unavailable("1", 7), unavailable("1", 3), placed}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	r := lineRunner(t, srv.URL, time.Minute)
	r.buyer(context.Background(), 0)

	if len(s.keys) != 3 {
		t.Fatalf("%d requests, want 3", len(s.keys))
	}
	for i := range s.keys {
		if s.keys[i] != s.keys[0] || s.bodies[i] != s.bodies[0] {
			t.Errorf("request %d: key %q body %s; the first: key %q body %s", i, s.keys[i], s.bodies[i], s.keys[0], s.bodies[0])
		}
	}
	if r.stats.Total(OutWait) != 2 || r.stats.Total(OutError) != 0 || r.stats.Total(OutAccepted) != 1 {
		t.Errorf("waits %d, errors %d, accepted %d; want 2, 0, 1", r.stats.Total(OutWait), r.stats.Total(OutError), r.stats.Total(OutAccepted))
	}
	if len(r.unresolved) != 0 || len(r.orders) != 1 {
		t.Errorf("unresolved %d, orders %d", len(r.unresolved), len(r.orders))
	}
	bl := r.buyers.snapshot()
	if len(bl.Groups) != 1 || bl.Groups[0].Outcome != BuyerPlaced || len(bl.Groups[0].ArrivedUS) != 1 {
		t.Fatalf("buyer log %+v, want one placed buyer", bl.Groups)
	}
	g := bl.Groups[0]
	waited := time.Duration(g.WaitedUS[0]) * time.Microsecond
	took := time.Duration(g.AnsweredUS[0]-g.ArrivedUS[0]) * time.Microsecond
	if g.Waits[0] != 2 || waited < 2*time.Second || waited > 2*time.Second+time.Duration(2*retryJitter*float64(time.Second))+500*time.Millisecond || took < waited || g.FirstWaitUS[0] < g.ArrivedUS[0] {
		t.Errorf("waits %d, waited %s, took %s from first arrival, first told to wait at %d µs (arrived %d)", g.Waits[0], waited, took, g.FirstWaitUS[0], g.ArrivedUS[0])
	}
	f := judgeFairness(bl)
	if f.Waits503 != 2 || f.BuyersWaited != 1 || f.Placed != 1 || f.Winners.P50MS < 2000 {
		t.Errorf("fairness %+v", f)
	}
	// The two 503s came about a second apart: one per second of the series.
	if pos := r.buyers.positions(0); len(pos) != 2 || pos[0].Max != 7 || pos[1].Max != 3 || pos[0].Answers+pos[1].Answers != 2 {
		t.Errorf("positions %+v, want 7 then 3", pos)
	}
}

// TestBuyerGivesUp: answered 503 for ever, a buyer of 1.5 s patience leaves without an answer 1.5 s after it
// arrived (its next retry would come later); the 503s are waits, not errors, and the visit is gave_up.
func TestBuyerGivesUp(t *testing.T) {
	t.Parallel()
	s := &lineServer{answers: []func(http.ResponseWriter){unavailable("1", -1)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	r := lineRunner(t, srv.URL, 1500*time.Millisecond)
	r.buyer(context.Background(), 0)

	if len(s.keys) != 2 {
		t.Errorf("%d requests, want 2 (at 0 and after about 1 s)", len(s.keys))
	}
	if r.stats.Total(OutWait) != 2 || r.stats.Total(OutError) != 0 {
		t.Errorf("waits %d, errors %d", r.stats.Total(OutWait), r.stats.Total(OutError))
	}
	bl := r.buyers.snapshot()
	if len(bl.Groups) != 1 || bl.Groups[0].Outcome != BuyerGaveUp {
		t.Fatalf("buyer log %+v, want one buyer that gave up", bl.Groups)
	}
	stayed := time.Duration(bl.Groups[0].AnsweredUS[0]-bl.Groups[0].ArrivedUS[0]) * time.Microsecond
	if stayed < 1500*time.Millisecond || stayed > 2*time.Second {
		t.Errorf("stayed %s, want its patience, 1.5 s", stayed)
	}
	if len(r.unresolved) != 1 {
		t.Errorf("unresolved %d: a buyer that left after a 503 is asked about again after the firing", len(r.unresolved))
	}
	if r.buyers.positions(0) != nil {
		t.Errorf("positions %v without Queue-Position", r.buyers.positions(0))
	}
}

// TestOneShotBuyer: with --patience 0 a 503 is an error, as before the line.
func TestOneShotBuyer(t *testing.T) {
	t.Parallel()
	s := &lineServer{answers: []func(http.ResponseWriter){unavailable("1", -1)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	r := lineRunner(t, srv.URL, 0)
	r.buyer(context.Background(), 0)
	if len(s.keys) != 1 || r.stats.Total(OutError) != 1 || r.stats.Total(OutWait) != 0 {
		t.Errorf("%d requests, errors %d, waits %d; want 1, 1, 0", len(s.keys), r.stats.Total(OutError), r.stats.Total(OutWait))
	}
	if g := r.buyers.snapshot().Groups; len(g) != 1 || g[0].Outcome != BuyerError || g[0].Waits[0] != 0 {
		t.Errorf("buyer log %+v", g)
	}
}

func TestRetryWait(t *testing.T) {
	for _, c := range []struct {
		ra       time.Duration
		u        float64
		min, max time.Duration
	}{
		{time.Second, 0, time.Second, time.Second},
		{time.Second, 0.999, time.Second, 1200 * time.Millisecond},
		{30 * time.Second, 0.5, 5500 * time.Millisecond, 5500 * time.Millisecond},
		{0, 0, minRetryAfter, minRetryAfter},
	} {
		if got := retryWait(c.ra, c.u); got < c.min || got > c.max {
			t.Errorf("retryWait(%s, %g) = %s, want %s to %s", c.ra, c.u, got, c.min, c.max)
		}
	}
}

// TestFairnessInTheReport: the summary and the page show the figures and the targets.
func TestFairnessInTheReport(t *testing.T) {
	bl := &BuyerLog{Patience: time.Minute, Groups: []BuyerGroup{
		{SKU: "A", Outcome: BuyerPlaced, ArrivedUS: []int64{msUS(1000)}, AnsweredUS: []int64{msUS(1500)}, FirstWaitUS: []int64{-1}, WaitedUS: []int64{0}, Waits: []int64{0}},
		{SKU: "A", Outcome: BuyerSoldOut, ArrivedUS: []int64{0}, AnsweredUS: []int64{msUS(5000)}, FirstWaitUS: []int64{msUS(1)}, WaitedUS: []int64{msUS(2000)}, Waits: []int64{2}},
	}}
	rep := &Report{RunID: "t", Params: DefaultConfig().Params(), Counts: map[string]int64{"wait": 2}, Snapshot: Snapshot{Quiet: true, Buyers: bl}, Line: bl.Line(0)}
	rep.Verdict = Check(rep.Snapshot)
	var sum, page bytes.Buffer
	rep.WriteSummary(&sum)
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"overtakes 1 (not judged)", "waits: 2 answers 503 to 1 buyers", "winners from first arrival: 1, p50 500 ms", "targets (issue 45, informational): overtakes 1 (target 0): not met", "=> OK"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	for _, want := range []string{"The line and fairness", `aria-label="the line"`, "told_to_wait", "not met"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestBuyerLeavesTheLine: answered 503 in-line for ever, a buyer of 1.5 s patience leaves without an answer;
// it is not asked about again after the firing (the answer was a place in the line, nothing done for the
// key, and asking again would take that place back and could place an order for a buyer who left).
func TestBuyerLeavesTheLine(t *testing.T) {
	t.Parallel()
	s := &lineServer{answers: []func(http.ResponseWriter){func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Queue-Position", "40")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"https://ordersaga.example/problems/in-line","title":"Waiting in line","status":503,"sku":"A","position":40}`)
	}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	r := lineRunner(t, srv.URL, 1500*time.Millisecond)
	r.buyer(context.Background(), 0)
	if len(s.keys) != 2 || r.stats.Total(OutWait) != 2 || r.stats.Total(OutError) != 0 {
		t.Errorf("%d requests, waits %d, errors %d; want 2, 2, 0", len(s.keys), r.stats.Total(OutWait), r.stats.Total(OutError))
	}
	if g := r.buyers.snapshot().Groups; len(g) != 1 || g[0].Outcome != BuyerGaveUp {
		t.Errorf("buyer log %+v, want one buyer that gave up", g)
	}
	if len(r.unresolved) != 0 {
		t.Errorf("unresolved %d: a buyer that left the line is not asked about again", len(r.unresolved))
	}
}
