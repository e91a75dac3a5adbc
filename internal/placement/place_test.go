package placement_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestPlace_Idempotency: the rules of one Idempotency-Key, on one saga.
func TestPlace_Idempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Stock(t, "SKU-1", 100, 999)
	e.Stock(t, "SKU-2", 100, 500)

	t.Run("same_key_same_request_replays_the_first_answer", func(t *testing.T) {
		t.Parallel()
		// A service of its own on the same saga: its count of placements is not moved by the subtests running
		// beside it on e.
		e := serviceOn(t, e.Env)
		lines := []ordersaga.Line{{SKU: "SKU-1", Qty: 1}, {SKU: "SKU-2", Qty: 3}}
		first := want(t, e.place("k-replay", "u-2", lines...), placement.Reserved)
		if id := e.KeyOrderID(t, "u-2", "k-replay"); first.OrderID != id || first.Order.OrderID != id {
			t.Errorf("order %s, want %s (the key's row's)", first.OrderID, id)
		}
		if first.Answer.Status != http.StatusCreated || !bytes.Equal(first.Answer.Body, keepAs(first.Order).Body) {
			t.Errorf("first answer %d %s, want KeepAs's", first.Answer.Status, first.Answer.Body)
		}
		places := e.places.value()
		for _, again := range [][]ordersaga.Line{
			lines,
			// The same lines listed in another order are the same request.
			{lines[1], lines[0]},
		} {
			r := want(t, e.place("k-replay", "u-2", again...), placement.Replayed)
			if r.Answer.Status != first.Answer.Status || !bytes.Equal(r.Answer.Body, first.Answer.Body) || r.OrderID != first.OrderID {
				t.Errorf("replay: %d %s of %s\nwant %d %s of %s", r.Answer.Status, r.Answer.Body, r.OrderID,
					first.Answer.Status, first.Answer.Body, first.OrderID)
			}
		}
		if got := e.places.value(); got != places {
			t.Errorf("a replay placed the order again (%d -> %d)", places, got)
		}
	})

	t.Run("same_key_other_request_is_key_reused", func(t *testing.T) {
		t.Parallel()
		want(t, e.place("k-changed", "u-3", ordersaga.Line{SKU: "SKU-1", Qty: 1}), placement.Reserved)
		want(t, e.place("k-changed", "u-3", ordersaga.Line{SKU: "SKU-1", Qty: 2}), placement.KeyReused)
		if n := e.countRows("orders", "user_id = ?", "u-3"); n != 1 {
			t.Errorf("%d orders of u-3, want 1", n)
		}
	})

	t.Run("same_key_other_user_is_another_order", func(t *testing.T) {
		t.Parallel()
		a := want(t, e.place("k-shared", "u-4a", ordersaga.Line{SKU: "SKU-1", Qty: 1}), placement.Reserved)
		b := want(t, e.place("k-shared", "u-4b", ordersaga.Line{SKU: "SKU-1", Qty: 1}), placement.Reserved)
		if a.OrderID == b.OrderID {
			t.Errorf("two users with one key: both order %s, want two orders", a.OrderID)
		}
	})

	t.Run("unknown_sku_starts_no_workflow", func(t *testing.T) {
		t.Parallel()
		out := want(t, e.place("k-unknown", "u-5", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "NOPE", Qty: 1}), placement.UnknownSKU)
		if out.SKU != "NOPE" {
			t.Errorf("unknown SKU %q, want NOPE", out.SKU)
		}
		e.noKey(t, "u-5", "k-unknown", "an unknown SKU")
	})
}

// TestPlace_SoldOut: the fast path refuses without a workflow or any state; a saga's sold out is not
// remembered (the same key succeeds once there is stock).
func TestPlace_SoldOut(t *testing.T) {
	t.Parallel()
	const lineHold = time.Second
	e := newEnv(t, func(c *placement.Config) { c.LineHold = lineHold })
	ctx := context.Background()

	t.Run("fast_path_refuses_without_a_workflow", func(t *testing.T) {
		e.Stock(t, "FAST-1", 1, 100)
		e.Stock(t, "FAST-2", 50, 100)
		want(t, e.place("k-first", "u-f1", ordersaga.Line{SKU: "FAST-1", Qty: 1}), placement.Reserved)
		places := e.places.value()
		for i := range 5 {
			key := fmt.Sprintf("k-late-%d", i)
			out := want(t, e.place(key, "u-f2", ordersaga.Line{SKU: "FAST-2", Qty: 1}, ordersaga.Line{SKU: "FAST-1", Qty: 1}), placement.SoldOut)
			if out.SKU != "FAST-1" || !out.FastPath {
				t.Errorf("outcome %+v: want sold out of FAST-1 from the fast path", out)
			}
			e.noKey(t, "u-f2", key, "the fast path")
		}
		if got := e.places.value(); got != places {
			t.Errorf("the fast path placed %d orders", got-places)
		}
		if n := e.countWorkflows("WorkflowType = 'OrderWorkflow' AND OrderSKUs = 'FAST-2'", 0); n != 0 {
			t.Errorf("%d workflows with FAST-2, want 0", n)
		}
		if n := e.countRows("orders", "user_id = ?", "u-f2"); n != 0 {
			t.Errorf("%d orders of u-f2, want 0", n)
		}
	})

	t.Run("fast_path_keeps_no_state_and_keys_with_state_still_answer", func(t *testing.T) {
		e.Stock(t, "FAST-3", 2, 100)
		line := ordersaga.Line{SKU: "FAST-3", Qty: 1}
		placed := map[string]placement.Outcome{}
		for _, key := range []string{"k-f3-a", "k-f3-b"} {
			placed[key] = want(t, e.place(key, "u-f3", line), placement.Reserved)
		}
		waitFastPath(t, e, "u-f3", line)

		// A key with state answers from it, though the SKU is sold out: its first answer, or KeyReused.
		again := want(t, e.place("k-f3-a", "u-f3", line), placement.Replayed)
		if !bytes.Equal(again.Answer.Body, placed["k-f3-a"].Answer.Body) {
			t.Errorf("replay of a placed key on a sold-out SKU: %s, want the first answer %s", again.Answer.Body, placed["k-f3-a"].Answer.Body)
		}
		want(t, e.place("k-f3-a", "u-f3", ordersaga.Line{SKU: "FAST-3", Qty: 2}), placement.KeyReused)

		// Redis loses the markers (a restart without persistence; the stock counter is reloaded from the
		// database as reconciliation does): the fast path is off until the markers are backfilled from the
		// database, and a placed key still replays meanwhile and after.
		prefix := strings.TrimSuffix(e.Redis.ClaimKey(""), "idem:")
		wiped := testenv.DeleteKeys(t, e.Redis.Client(), prefix+"idem:*", prefix+"{idem}:*")
		if wiped < 3 {
			t.Fatalf("wiped %d marker keys, want at least the 2 placed keys' and ready", wiped)
		}
		if r := want(t, e.place("k-f3-a", "u-f3", line), placement.Replayed); !bytes.Equal(r.Answer.Body, placed["k-f3-a"].Answer.Body) {
			t.Errorf("replay while the markers are gone: %s", r.Answer.Body)
		}
		waitFastPath(t, e, "u-f3", line)
		rec, err := e.Store.IdempotencyKey(ctx, "u-f3", "k-f3-b")
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.Redis.Client().Get(ctx, e.Redis.ClaimKey(placement.MarkerName("u-f3", "k-f3-b"))).Result()
		if err != nil || m != rec.Nonce {
			t.Errorf("marker of k-f3-b after the backfill: %q %v, want it back with the row's nonce %q", m, err, rec.Nonce)
		}
		if r := want(t, e.place("k-f3-b", "u-f3", line), placement.Replayed); !bytes.Equal(r.Answer.Body, placed["k-f3-b"].Answer.Body) {
			t.Errorf("replay after the backfill: %s", r.Answer.Body)
		}
	})

	t.Run("admission_gate_waits_while_the_units_left_are_being_placed", func(t *testing.T) {
		e.Stock(t, "GATE-1", 2, 100)
		line := ordersaga.Line{SKU: "GATE-1", Qty: 1}
		// Two placements of other requests hold the two units left in the gate's count (admitted for real: a
		// count without a live process behind it is reaped).
		var others []*admission.Admission
		for range 2 {
			others = append(others, e.admitOther(t, line))
		}
		defer others[1].Done(ctx)
		places := e.places.value()
		// The request waits for them rather than answer sold out: one is decided (its units handed back, as a
		// rejected order's are) while it waits, and the request gets the unit.
		handedBack := make(chan time.Time, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			others[0].Done(ctx)
			handedBack <- time.Now()
		}()
		r := want(t, e.place("k-gate", "u-g", line), placement.Reserved)
		if answered, back := time.Now(), <-handedBack; answered.Before(back) {
			t.Errorf("placed at %v, before the unit was handed back at %v", answered, back)
		}
		if got := e.places.value(); got != places+1 {
			t.Errorf("%d orders placed, want 1 (%s)", got-places, r.OrderID)
		}
		if n, err := e.Gate.Admitting(ctx, "GATE-1"); err != nil || n != 1 {
			t.Errorf("units being placed after the answer: %d %v, want the other request's 1", n, err)
		}
	})

	t.Run("admission_gate_answers_sold_out_only_once_the_units_are_gone", func(t *testing.T) {
		e.Stock(t, "GATE-2", 1, 100)
		line := ordersaga.Line{SKU: "GATE-2", Qty: 1}
		other := e.admitOther(t, line)
		// The other placement reserves its unit (the counter drops) and then hands its count back, as a
		// placement does when its order is reserved: only then is the waiting request told sold out.
		reserved := make(chan time.Time, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			if _, err := e.Redis.Reserve(ctx, "o-gate-2-other", "u-other", "GATE-2", 1); err != nil {
				t.Errorf("reserve of the other placement: %v", err)
			}
			reserved <- time.Now()
			other.Done(ctx)
		}()
		out := want(t, e.place("k-gate-2", "u-g", line), placement.SoldOut)
		if at, when := time.Now(), <-reserved; at.Before(when) || out.SKU != "GATE-2" {
			t.Errorf("sold out of %q at %v, the unit reserved at %v", out.SKU, at, when)
		}
		e.noKey(t, "u-g", "k-gate-2", "the gate's wait")
	})
	t.Run("line_answers_in_line_when_the_placements_stay_undecided", func(t *testing.T) {
		e.Stock(t, "GATE-3", 1, 100)
		line := ordersaga.Line{SKU: "GATE-3", Qty: 1}
		other := e.admitOther(t, line)
		defer other.Done(ctx)
		places := e.places.value()
		asked := time.Now()
		out := want(t, e.place("k-gate-3", "u-g", line), placement.InLine)
		if waited := time.Since(asked); waited < lineHold || out.SKU != "GATE-3" || out.Position != 0 || out.RetryAfter != time.Second {
			t.Errorf("in line for %q at %d after %v (Retry-After %v), want for GATE-3 at 0 after the hold (%v), back within 1s",
				out.SKU, out.Position, waited, out.RetryAfter, lineHold)
		}
		if got := e.places.value(); got != places {
			t.Errorf("the gate placed %d orders", got-places)
		}
		e.noKey(t, "u-g", "k-gate-3", "the gate")
		if n := e.countRows("idempotency_keys", "user_id = ? AND idem_key = ?", "u-g", "k-gate-3"); n != 0 {
			t.Errorf("the gate's answer wrote %d idempotency rows, want 0", n)
		}
	})

	t.Run("saga_sold_out_is_not_remembered_and_the_key_succeeds_later", func(t *testing.T) {
		// Redis promises 5 but the database (the truth) has 0: the saga reserves, the deduct refuses.
		if err := e.Store.SetInventory(ctx, "SAGA-1", 0, 700); err != nil {
			t.Fatal(err)
		}
		if err := e.Redis.SetAvailable(ctx, "SAGA-1", 5); err != nil {
			t.Fatal(err)
		}
		line := ordersaga.Line{SKU: "SAGA-1", Qty: 2}
		if out := want(t, e.place("k-saga", "u-s", line), placement.SoldOut); out.SKU != "SAGA-1" || out.FastPath {
			t.Errorf("outcome %+v: want sold out of SAGA-1 by the saga", out)
		}
		rec, err := e.Store.IdempotencyKey(ctx, "u-s", "k-saga")
		if err != nil {
			t.Fatal(err)
		}
		rejected := placement.OrderID("u-s", "k-saga", rec.Nonce, 0)
		var o ordersaga.Order
		if err := e.Client.GetWorkflow(ctx, workflows.OrderWorkflowID(rejected), "").Get(ctx, &o); err != nil || o.Status != ordersaga.StatusRejected {
			t.Fatalf("order %s: %+v %v, want REJECTED", rejected, o, err)
		}
		// Still sold out: a fresh refusal, not a replay.
		want(t, e.place("k-saga", "u-s", line), placement.SoldOut)

		e.Stock(t, "SAGA-1", 10, 700)
		r := want(t, e.place("k-saga", "u-s", line), placement.Reserved)
		if r.OrderID == rejected {
			t.Errorf("the retry reused the rejected order ID %s", rejected)
		}
		if r.OrderID != placement.OrderID("u-s", "k-saga", rec.Nonce, 1) && r.OrderID != placement.OrderID("u-s", "k-saga", rec.Nonce, 2) {
			t.Errorf("order ID %s is not a later generation of the key", r.OrderID)
		}
		if again := want(t, e.place("k-saga", "u-s", line), placement.Replayed); !bytes.Equal(again.Answer.Body, r.Answer.Body) {
			t.Errorf("replay after the success: %s, want %s", again.Answer.Body, r.Answer.Body)
		}
	})
}

// waitFastPath waits until the sold-out fast path refuses a new key of user with lines without a trace in the
// database: sold out and no idempotency_keys row (the markers it needs are backfilled in the background when
// a service starts or finds them gone).
func waitFastPath(t *testing.T, e *env, user string, lines ...ordersaga.Line) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		key := fmt.Sprintf("k-probe-%d-%d", time.Now().UnixNano(), i)
		want(t, e.place(key, user, lines...), placement.SoldOut)
		if e.countRows("idempotency_keys", "user_id = ? AND idem_key = ?", user, key) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sold-out fast path still writes to the database after a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
