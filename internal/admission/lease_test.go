package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// The admission times of the lease tests: production's are seconds (see Admit), these a fraction.
const (
	testLease = time.Second
	testRenew = 100 * time.Millisecond
	testReap  = 100 * time.Millisecond
)

// admissionProcesses returns n admission gates on one Redis, as n API processes would have, and advance, which
// lets d pass for Redis's expiries and for the processes' heartbeats alike, in steps of testRenew. A step
// ends once every process whose heartbeat runs has renewed its leases since the step began (about testRenew
// of real time, longer on a loaded machine), and only then moves miniredis's clock by the step: a live
// process's lease expires only if its heartbeat stops, never because the machine was too busy to run it
// before the clock moved. With no heartbeat running the step is testRenew of real time.
func admissionProcesses(t *testing.T, n int) ([]*admission.Gate, func(d time.Duration)) {
	t.Helper()
	var (
		rdb    redis.UniversalClient
		prefix string
		mr     *miniredis.Miniredis
	)
	if testenv.RealRedis() {
		rdb, prefix = testenv.RedisClient(t)
	} else {
		mr = miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		rdb = c
	}
	procs := make([]*admission.Gate, n)
	for i := range procs {
		procs[i] = admission.New(redisstock.New(rdb, prefix, 0))
		procs[i].SetAdmissionTimes(testLease, testRenew, testReap)
		t.Cleanup(procs[i].Kill)
	}
	advance := func(d time.Duration) {
		t.Helper()
		for ; d > 0; d -= testRenew {
			if !renewedOnce(t, procs) {
				time.Sleep(min(d, testRenew))
			}
			if mr != nil {
				mr.FastForward(min(d, testRenew))
			}
		}
	}
	return procs, advance
}

// renewedOnce waits until each of procs whose heartbeat runs has renewed its leases once more (or stopped
// beating), and reports whether any heartbeat ran.
func renewedOnce(t *testing.T, procs []*admission.Gate) bool {
	t.Helper()
	before := make([]int64, len(procs))
	ran := false
	for i, p := range procs {
		n, beating := p.Renewals()
		before[i], ran = n, ran || beating
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, p := range procs {
		for {
			n, beating := p.Renewals()
			if n > before[i] || !beating {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d's heartbeat has not renewed its leases for 30s (every %v)", i, testRenew)
			}
			time.Sleep(testRenew / 20)
		}
	}
	return ran
}

// TestAdmitLeases: the units an API process counted stay counted exactly as long as it lives. While it is
// alive nothing expires them, however long its placements take and however many refused buyers retry; once
// it dies (its Done never runs, its heartbeat stops) the buyers who keep retrying get its units within about
// one lease.
func TestAdmitLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	procs, advance := admissionProcesses(t, 3)
	a, b, buyers := procs[0], procs[1], procs[2]
	const sku = "LEASE-1"
	// refused reports whether a buyer of one unit is refused now.
	refused := func() bool {
		adm, refusedSKU, err := buyers.AdmitNow(ctx, []ordersaga.Line{{SKU: sku, Qty: 1}}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		adm.Done(ctx)
		return refusedSKU == sku
	}
	if err := a.Stock().SetAvailable(ctx, sku, 3); err != nil {
		t.Fatal(err)
	}
	token, err := a.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	finishBackfill(t, a, token)
	admitting := func(want int64) {
		t.Helper()
		if n, err := a.Admitting(ctx, sku); err != nil || n != want {
			t.Fatalf("admitting %d %v, want %d", n, err, want)
		}
	}
	// A places one unit and B two; both stay alive and neither is done.
	admA := mustAdmit(t, a, sku, 1)
	mustAdmit(t, b, sku, 2)
	for waited := time.Duration(0); waited < 3*testLease; waited += testRenew {
		if !refused() {
			t.Fatalf("a buyer was let in after %v while A and B are alive and place every unit", waited)
		}
		advance(testRenew)
	}
	admitting(3)

	// B dies: the buyers who keep retrying get its two units within about a lease.
	b.Kill()
	var waited time.Duration
	for ; refused(); waited += testRenew {
		if waited > testLease+10*testRenew {
			t.Fatalf("still refused %v after B died (lease %v): a dead process's count outlives it", waited, testLease)
		}
		advance(testRenew)
	}
	t.Logf("B's units were free again %v after it died (lease %v)", waited, testLease)
	admitting(1)

	// A is alive: its unit stays counted however long it places it.
	admC := mustAdmit(t, buyers, sku, 1)
	for range 3 * testLease / testRenew {
		advance(testRenew)
		if adm, refusedSKU, err := buyers.AdmitNow(ctx, []ordersaga.Line{{SKU: sku, Qty: 2}}, time.Minute); err != nil || refusedSKU != sku {
			t.Fatalf("an order of 2 with A's and C's units placed: %v %q %v, want refused", adm, refusedSKU, err)
		}
	}
	admitting(2)
	admA.Done(ctx)
	admC.Done(ctx)
	admitting(0)
}

// mustAdmit admits qty units of sku on proc.
func mustAdmit(t *testing.T, proc *admission.Gate, sku string, qty int64) *admission.Admission {
	t.Helper()
	adm, refused, err := proc.AdmitNow(context.Background(), []ordersaga.Line{{SKU: sku, Qty: qty}}, time.Minute)
	if err != nil || refused != "" || adm == nil {
		t.Fatalf("admit %d of %s: %v %q %v, want admitted", qty, sku, adm, refused, err)
	}
	return adm
}
