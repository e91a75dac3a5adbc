package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

const testRetention = 3 * time.Second

// claim claims (user, key) with a fresh nonce and an order ID naming it.
func claim(t *testing.T, s *sqlstore.Store, user, key, fingerprint string) (sqlstore.IdempotencyRecord, bool) {
	t.Helper()
	nonce := testenv.RandomID(16)
	rec, fresh, err := s.ClaimIdempotencyKey(context.Background(), sqlstore.IdempotencyClaim{
		UserID: user, Key: key, Fingerprint: fingerprint, Nonce: nonce, OrderID: "o-" + nonce[:24],
	}, testRetention)
	if err != nil {
		t.Fatal(err)
	}
	if fresh && (rec.Nonce != nonce || rec.OrderID != "o-"+nonce[:24]) {
		t.Fatalf("fresh claim returned %+v, want nonce %s", rec, nonce)
	}
	return rec, fresh
}

// TestIdempotencyKey_ExpiresAndRenewsInPlace: within the retention after its last use a key's row is the same
// life (same nonce, order ID, answer, fingerprint); once unused for its life (its order closed), a claim renews
// the row in place as a new life, whatever its body, and an update still aimed at the old life (its order ID)
// changes nothing of the new one.
func TestIdempotencyKey_ExpiresAndRenewsInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.MustOpenStore(t)
	clk := testenv.NewClock()
	s.SetClock(clk.Now)

	first, fresh := claim(t, s, "u-1", "k-1", "fp-1")
	if !fresh || first.Generation != 0 || first.Started {
		t.Fatalf("first claim: %+v fresh=%v", first, fresh)
	}
	if err := s.MarkIdempotencyStarted(ctx, "u-1", "k-1", first.OrderID); err != nil {
		t.Fatal(err)
	}
	if _, stored, err := s.KeepIdempotentAnswer(ctx, "u-1", "k-1", first.OrderID, 201, []byte("first")); err != nil || !stored {
		t.Fatalf("keep: %v %v", stored, err)
	}
	recordOrder(t, s, first.OrderID, "PAID") // closed: nothing but its answers keeps the key
	clk.Advance(testRetention - time.Millisecond)
	again, fresh := claim(t, s, "u-1", "k-1", "fp-other")
	if fresh || again.Nonce != first.Nonce || again.OrderID != first.OrderID || string(again.Body) != "first" || again.Fingerprint != "fp-1" {
		t.Fatalf("within the retention: %+v fresh=%v, want the first life", again, fresh)
	}

	// That use was the last: the key lives its life (the retention and a refresh step) after it.
	clk.Advance(sqlstore.IdempotencyLife(testRetention) - time.Millisecond)
	if again, fresh := claim(t, s, "u-1", "k-1", "fp-other"); fresh || again.Nonce != first.Nonce {
		t.Fatalf("within the life after the last use: %+v fresh=%v, want the first life", again, fresh)
	}
	clk.Advance(sqlstore.IdempotencyLife(testRetention) + time.Millisecond)
	renewed, fresh := claim(t, s, "u-1", "k-1", "fp-2")
	if !fresh || renewed.Nonce == first.Nonce || renewed.OrderID == first.OrderID || renewed.Fingerprint != "fp-2" ||
		renewed.Generation != 0 || renewed.Started || renewed.Answered() || renewed.Age.Abs() > time.Millisecond {
		t.Fatalf("after the retention: %+v fresh=%v, want a new life", renewed, fresh)
	}
	if n := rowsOf(t, s, "u-1", "k-1"); n != 1 {
		t.Errorf("%d rows for the key, want 1 (renewed in place)", n)
	}
	// A request still busy with the old life changes nothing of the new one.
	if err := s.MarkIdempotencyStarted(ctx, "u-1", "k-1", first.OrderID); err != nil {
		t.Fatal(err)
	}
	if err := s.NextIdempotencyGeneration(ctx, "u-1", "k-1", first.OrderID, "o-old-next"); err != nil {
		t.Fatal(err)
	}
	if _, stored, err := s.KeepIdempotentAnswer(ctx, "u-1", "k-1", first.OrderID, 201, []byte("old")); err != nil || stored {
		t.Fatalf("keep for the old life: stored=%v %v, want nothing stored", stored, err)
	}
	if cur, err := s.IdempotencyKey(ctx, "u-1", "k-1"); err != nil || cur.OrderID != renewed.OrderID || cur.Started || cur.Answered() {
		t.Errorf("after old-life updates: %+v %v, want the new life untouched", cur, err)
	}
}

// TestIdempotencyKey_ConcurrentClaimsOfAnExpiredKeyRenewItOnce: twenty requests claim an expired key at once;
// one renews it, every one sees that life.
func TestIdempotencyKey_ConcurrentClaimsOfAnExpiredKeyRenewItOnce(t *testing.T) {
	t.Parallel()
	s := testenv.MustOpenStore(t)
	clk := testenv.NewClock()
	s.SetClock(clk.Now)
	old, _ := claim(t, s, "u-c", "k-c", "fp")
	clk.Advance(testRetention + time.Second)

	const n = 20
	recs := make([]sqlstore.IdempotencyRecord, n)
	fresh := make([]bool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			recs[i], fresh[i] = claim(t, s, "u-c", "k-c", fmt.Sprintf("fp-%d", i))
		})
	}
	close(start)
	wg.Wait()
	renewals := 0
	for i := range n {
		if fresh[i] {
			renewals++
		}
		if recs[i].Nonce != recs[0].Nonce || recs[i].OrderID != recs[0].OrderID {
			t.Errorf("claim %d saw life %s (%s), claim 0 %s (%s)", i, recs[i].Nonce, recs[i].OrderID, recs[0].Nonce, recs[0].OrderID)
		}
	}
	if renewals != 1 || recs[0].Nonce == old.Nonce {
		t.Errorf("%d claims renewed the key (nonce %s, old %s), want exactly 1", renewals, recs[0].Nonce, old.Nonce)
	}
	if c := rowsOf(t, s, "u-c", "k-c"); c != 1 {
		t.Errorf("%d rows, want 1", c)
	}
}

// TestExpiredIdempotencyKeys_DeletedOnlyWhileStillTheExpiredLife: the cleanup's reads find the expired rows
// only; a row renewed (or within the retention) after the read is not deleted.
func TestExpiredIdempotencyKeys_DeletedOnlyWhileStillTheExpiredLife(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.MustOpenStore(t)
	clk := testenv.NewClock()
	s.SetClock(clk.Now)
	for i := range 5 {
		claim(t, s, "u-e", fmt.Sprintf("k-old-%d", i), "fp")
	}
	clk.Advance(testRetention + time.Second)
	live, _ := claim(t, s, "u-e", "k-live", "fp")

	expired, err := s.ExpiredIdempotencyKeys(ctx, testRetention, 100)
	if err != nil || len(expired) != 5 {
		t.Fatalf("expired: %d rows %v, want the 5 old ones", len(expired), err)
	}
	for _, r := range expired {
		if r.Nonce == "" || r.Age <= testRetention {
			t.Errorf("expired row %+v: want its nonce and an age over the retention", r)
		}
	}
	if page, err := s.IdempotencyKeysAfter(ctx, 0, 100, testRetention); err != nil || len(page) != 1 || page[0].Nonce != live.Nonce {
		t.Errorf("backfill page: %+v %v, want the live row only", page, err)
	}
	// k-old-0 is renewed between the cleanup's read and its delete.
	renewed, fresh := claim(t, s, "u-e", "k-old-0", "fp")
	if !fresh {
		t.Fatal("the expired key was not renewed")
	}
	deleted, err := s.DeleteExpiredIdempotencyKeys(ctx, expired, testRetention)
	if err != nil || len(deleted) != 4 {
		t.Fatalf("deleted %d rows %v, want 4 (the renewed one stays)", len(deleted), err)
	}
	if cur, err := s.IdempotencyKey(ctx, "u-e", "k-old-0"); err != nil || cur.Nonce != renewed.Nonce {
		t.Errorf("renewed row after the delete: %+v %v", cur, err)
	}
	if n := rowsOf(t, s, "u-e", ""); n != 2 {
		t.Errorf("%d rows left, want the renewed and the live one", n)
	}
	// A second delete of the same rows deletes nothing (safe to retry).
	if again, err := s.DeleteExpiredIdempotencyKeys(ctx, expired, testRetention); err != nil || len(again) != 0 {
		t.Errorf("second delete: %d %v, want none", len(again), err)
	}
}

// rowsOf counts the rows of user (and key, unless "").
func rowsOf(t *testing.T, s *sqlstore.Store, user, key string) int64 {
	t.Helper()
	q, args := "SELECT COUNT(*) FROM idempotency_keys WHERE user_id = ?", []any{user}
	if key != "" {
		q, args = q+" AND idem_key = ?", append(args, key)
	}
	var n int64
	if err := s.DB().Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// recordOrder writes the orders row of orderID with status, as the saga would (tests of the keys alone).
func recordOrder(t *testing.T, s *sqlstore.Store, orderID, status string) {
	t.Helper()
	if err := s.DB().Exec(`INSERT INTO orders (order_id, user_id, status, currency) VALUES (?, 'u', ?, 'CNY')`, orderID, status).Error; err != nil {
		t.Fatal(err)
	}
}

// TestIdempotencyKey_LivesTheRetentionAfterItsLastUse: each use of a live key restarts its retention; only a
// key unused for the retention is renewed.
func TestIdempotencyKey_LivesTheRetentionAfterItsLastUse(t *testing.T) {
	t.Parallel()
	s := testenv.MustOpenStore(t)
	clk := testenv.NewClock()
	s.SetClock(clk.Now)
	first, _ := claim(t, s, "u-l", "k-l", "fp")
	for range 3 {
		clk.Advance(testRetention - 100*time.Millisecond)
		if again, fresh := claim(t, s, "u-l", "k-l", "fp"); fresh || again.Nonce != first.Nonce {
			t.Fatalf("use within the retention of the last: %+v fresh=%v, want the first life", again, fresh)
		}
	}
	if expired, err := s.ExpiredIdempotencyKeys(context.Background(), testRetention, 10); err != nil || len(expired) != 0 {
		t.Errorf("expired: %+v %v, want none (the key was used within the retention)", expired, err)
	}
	clk.Advance(testRetention + time.Second)
	if renewed, fresh := claim(t, s, "u-l", "k-l", "fp"); !fresh || renewed.Nonce == first.Nonce {
		t.Errorf("use past the retention of the last: %+v fresh=%v, want a new life", renewed, fresh)
	}
}

// TestIdempotencyKey_KeptWhileItsOrderMayBeOpen: a started key whose order is open (AWAITING_PAYMENT), or not
// recorded yet (its workflow may still deduct), is neither renewed nor found expired, whatever its age; once
// its order is final it expires as any other.
func TestIdempotencyKey_KeptWhileItsOrderMayBeOpen(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"", "RESERVING", "AWAITING_PAYMENT"} {
		t.Run("order_"+map[string]string{"": "not_recorded"}[status]+status, func(t *testing.T) {
			t.Parallel()
			keptWhileOpen(t, status)
		})
	}
}

// keptWhileOpen is TestIdempotencyKey_KeptWhileItsOrderMayBeOpen for one status of the order ("": no record).
func keptWhileOpen(t *testing.T, status string) {
	t.Helper()
	ctx := context.Background()
	s := testenv.MustOpenStore(t)
	clk := testenv.NewClock()
	s.SetClock(clk.Now)
	const key = "k-open"
	first, _ := claim(t, s, "u-o", key, "fp")
	if err := s.MarkIdempotencyStarted(ctx, "u-o", key, first.OrderID); err != nil {
		t.Fatal(err)
	}
	if status != "" {
		recordOrder(t, s, first.OrderID, status)
	}
	clk.Advance(2 * testRetention)
	if expired, err := s.ExpiredIdempotencyKeys(ctx, testRetention, 10); err != nil || len(expired) != 0 {
		t.Errorf("order %q: expired %+v %v, want none", status, expired, err)
	}
	if page, err := s.IdempotencyKeysAfter(ctx, 0, 100, testRetention); err != nil || len(page) != 1 || page[0].Nonce != first.Nonce {
		t.Errorf("order %q: backfill page %+v %v, want the key (it is live)", status, page, err)
	}
	if again, fresh := claim(t, s, "u-o", key, "fp"); fresh || again.Nonce != first.Nonce || !again.Started {
		t.Errorf("order %q: claim past the retention: %+v fresh=%v, want the same life", status, again, fresh)
	}
	// Closed: the key expires a retention after its last use.
	if status == "" {
		recordOrder(t, s, first.OrderID, "REJECTED")
	} else if err := s.DB().Exec(`UPDATE orders SET status = 'EXPIRED' WHERE order_id = ?`, first.OrderID).Error; err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * testRetention)
	if expired, err := s.ExpiredIdempotencyKeys(ctx, testRetention, 10); err != nil || len(expired) != 1 || expired[0].Nonce != first.Nonce {
		t.Errorf("order %q closed: expired %+v %v, want the key", status, expired, err)
	}
	if renewed, fresh := claim(t, s, "u-o", key, "fp"); !fresh || renewed.Nonce == first.Nonce {
		t.Errorf("order %q closed: claim past the retention: %+v fresh=%v, want a new life", status, renewed, fresh)
	}
}
