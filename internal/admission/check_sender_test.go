package admission_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestCheckSenderLingers: a sender that has answered waits for the next check instead of ending (a flood's
// checks come in bursts, and a new sender grows its stack again), answers it, and ends once idle for its
// linger: nothing runs on after the checks stop.
func TestCheckSenderLingers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	g.SetCheckLinger(300 * time.Millisecond)
	if err := rs.SetAvailable(ctx, "LG-GONE", 0); err != nil {
		t.Fatal(err)
	}
	check := func(i int) {
		t.Helper()
		c, err := g.CheckOrder(ctx, fmt.Sprintf("m-%d", i), "u", []ordersaga.Line{{SKU: "LG-GONE", Qty: 1}})
		if err != nil || c.SoldOutSKU != "LG-GONE" {
			t.Fatalf("check %d: %+v %v, want LG-GONE short", i, c, err)
		}
	}
	check(0)
	waitSenders(t, g, 1, 1, time.Second) // answered, and waiting for more
	for i := 1; i <= 5; i++ {
		waitSenders(t, g, 1, 1, time.Second)
		check(i)
		if running, _ := g.CheckSenders(); running != 1 {
			t.Fatalf("after check %d: %d senders, want the one that lingered", i, running)
		}
	}
	waitSenders(t, g, 0, 0, 3*time.Second) // idle past its linger: ended
	check(6)                               // and a new one starts when needed
	waitSenders(t, g, 1, 1, time.Second)
}

// TestCheckSendersUnderRacingWakes: checks arriving as idle senders give up (a linger of a few microseconds,
// so that the wake and the timer race all the time) are all answered, and the counts of senders come back
// to none. A wake lost to a sender that ended would leave its check unanswered: the test would time out.
func TestCheckSendersUnderRacingWakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	g.SetCheckLinger(5 * time.Microsecond)
	if err := rs.SetAvailable(ctx, "RW-SOME", 10); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 200 {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				c, err := g.CheckOrder(ctx, fmt.Sprintf("m-%d-%d", w, i), "u", []ordersaga.Line{{SKU: "RW-SOME", Qty: 1}})
				cancel()
				if err != nil || c.SoldOutSKU != "" {
					t.Errorf("check %d of %d: %+v %v, want an answer with units left", i, w, c, err)
					return
				}
				if i%7 == 0 {
					time.Sleep(time.Duration(i%3) * 10 * time.Microsecond) // let senders go idle and give up
				}
			}
		})
	}
	wg.Wait()
	waitSenders(t, g, 0, 0, 3*time.Second)
}

func waitSenders(t *testing.T, g *admission.Gate, running, idle int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, i := g.CheckSenders()
		if r == running && i == idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("senders %d running, %d idle after %v; want %d and %d", r, i, within, running, idle)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
