package sale

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
)

// One Idempotency-Key is one request: sent when first sent, answered when last answered; an accepted or an
// unsure answer among refusals makes it one that may hold units; refusals keep the last one's kind and the SKU
// they all named.
func TestPlaceLogMergesTheAnswersOfAKey(t *testing.T) {
	const ms = time.Millisecond
	type answer struct {
		sent, answered time.Duration
		out            Outcome
		sku            string
	}
	a1 := []ordersaga.Line{{SKU: "A", Qty: 1}}
	cases := []struct {
		name    string
		answers []answer
		out     string
		sku     string
		sent    int64
		answer  int64
	}{
		{"one sold out", []answer{{1 * ms, 2 * ms, OutSoldOut, "A"}}, "sold_out", "A", 1000, 2000},
		{"sold out, then accepted", []answer{{1 * ms, 2 * ms, OutSoldOut, "A"}, {5 * ms, 9 * ms, OutAccepted, ""}}, "accepted", "", 1000, 9000},
		{"racing resend answered first", []answer{{3 * ms, 9 * ms, OutAccepted, ""}, {1 * ms, 4 * ms, OutError, ""}}, "accepted", "", 1000, 9000},
		{"sold out, then still deciding", []answer{{1 * ms, 2 * ms, OutSoldOut, "A"}, {3 * ms, 4 * ms, OutError, ""}}, "error", "", 1000, 4000},
		{"limit, then sold out", []answer{{1 * ms, 2 * ms, OutLimitExceeded, "A"}, {3 * ms, 4 * ms, OutSoldOut, "A"}}, "sold_out", "A", 1000, 4000},
		{"sold out answered last of two", []answer{{3 * ms, 4 * ms, OutSoldOut, "A"}, {1 * ms, 2 * ms, OutLimitExceeded, "A"}}, "sold_out", "A", 1000, 4000},
		{"refusals naming different SKUs", []answer{{1 * ms, 2 * ms, OutSoldOut, "A"}, {3 * ms, 4 * ms, OutSoldOut, "B"}, {5 * ms, 6 * ms, OutSoldOut, "A"}}, "sold_out", "", 1000, 6000},
		{"rounded outwards", []answer{{1500 * time.Nanosecond, 2001 * time.Nanosecond, OutSoldOut, "A"}}, "sold_out", "A", 1, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newPlaceLog()
			n := &placeNote{lines: a1}
			for _, a := range c.answers {
				l.answered(n, a.sent, a.answered, a.out, a.sku)
			}
			l.done(n)
			l.done(&placeNote{lines: a1}) // never sent: not logged
			got := l.snapshot()
			want := []PlaceGroup{{Lines: a1, Outcome: c.out, SKU: c.sku, SentUS: []int64{c.sent}, AnsweredUS: []int64{c.answer}}}
			if !reflect.DeepEqual(got.Groups, want) {
				t.Errorf("logged %+v, want %+v", got.Groups, want)
			}
		})
	}
}

// What an answer says of the units its request may hold.
func TestPlaceOutcome(t *testing.T) {
	problem := func(kind string) Problem { return Problem{Type: "https://ordersaga.dev/problems/" + kind} }
	cases := []struct {
		a    Answer
		err  error
		want Outcome
	}{
		{Answer{Status: http.StatusCreated}, nil, OutAccepted},
		{Answer{Status: http.StatusConflict, Problem: problem("sold-out")}, nil, OutSoldOut},
		{Answer{Status: http.StatusConflict, Problem: problem("limit-exceeded")}, nil, OutLimitExceeded},
		{Answer{Status: http.StatusConflict, Problem: problem("order-pending")}, nil, OutError},
		{Answer{Status: http.StatusServiceUnavailable, Problem: problem("unavailable")}, nil, OutError},
		{Answer{}, http.ErrHandlerTimeout, OutError},
		{Answer{Status: http.StatusConflict, Problem: problem("sold-out")}, http.ErrHandlerTimeout, OutError},
	}
	for _, c := range cases {
		if got := placeOutcome(c.a, c.err); got != c.want {
			t.Errorf("%d %s (err %v): %s, want %s", c.a.Status, c.a.Problem.Type, c.err, got, c.want)
		}
	}
}

// The log goes through report.json and is judged the same again (--rejudge).
func TestPlaceLogRoundTrip(t *testing.T) {
	a1 := lines(of("A", 1))
	s := runOf(map[string]int64{"A": 100}, reqs(60, 0, 80, OutAccepted, a1), reqs(3, 60, 70, OutError, a1),
		[]req{soldOutAt(100, 105, "A", a1), soldOutAt(101, 106, "A", a1)})
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Places.Groups, s.Places.Groups) || !back.Places.From.Equal(s.Places.From) {
		t.Fatalf("log changed through JSON:\n%+v\n%+v", back.Places, s.Places)
	}
	v, again := Check(s), Check(back)
	if v.UndersoldUnits != 37 || again.UndersoldUnits != v.UndersoldUnits || again.SoldOutJudged != 2 {
		t.Errorf("undersold_units %d, again %d (judged %d)", v.UndersoldUnits, again.UndersoldUnits, again.SoldOutJudged)
	}
	back.Places.add(a1, "accepted", "", 1, 2) // a decoded log takes more requests into its groups
	if len(back.Places.Groups) != len(s.Places.Groups) {
		t.Errorf("groups %d after an add, want %d", len(back.Places.Groups), len(s.Places.Groups))
	}
}
