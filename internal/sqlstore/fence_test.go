package sqlstore_test

import (
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestMarkerFence: the fence starts down; a raise puts it up with a new gen and ActiveFor counted by the
// database's clock from the first raise (a second raise keeps it); a lowering with a gen read before a later
// raise fails (that raiser's key may be unmarked), with the current gen it succeeds, and only once.
func TestMarkerFence(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	f, err := store.ReadMarkerFence(ctx)
	if err != nil || f.Active {
		t.Fatalf("fresh fence %+v (%v), want down", f, err)
	}
	up, err := store.RaiseMarkerFence(ctx)
	if err != nil || !up.Active || up.Gen != f.Gen+1 || up.ActiveFor > time.Second {
		t.Fatalf("raised: %+v (%v), want up, gen %d, just now", up, err, f.Gen+1)
	}
	time.Sleep(300 * time.Millisecond)
	again, err := store.RaiseMarkerFence(ctx)
	if err != nil || !again.Active || again.Gen != up.Gen+1 || again.ActiveFor < 250*time.Millisecond || again.ActiveFor > 5*time.Second {
		t.Fatalf("raised again: %+v (%v), want gen %d, up since the first raise (~300ms)", again, err, up.Gen+1)
	}
	if ok, err := store.LowerMarkerFence(ctx, up.Gen); err != nil || ok {
		t.Fatalf("lowered with a gen read before the last raise: %v (%v), want refused", ok, err)
	}
	if ok, err := store.LowerMarkerFence(ctx, again.Gen); err != nil || !ok {
		t.Fatalf("lowered with the current gen: %v (%v), want lowered", ok, err)
	}
	if ok, err := store.LowerMarkerFence(ctx, again.Gen); err != nil || ok {
		t.Fatalf("lowered twice: %v (%v), want refused the second time", ok, err)
	}
	if f, err := store.ReadMarkerFence(ctx); err != nil || f.Active || f.ActiveFor != 0 {
		t.Fatalf("after lowering: %+v (%v), want down", f, err)
	}
	t.Logf("fence: raise, raise after 300ms -> up for %s by the %s clock; lowered by gen", again.ActiveFor.Round(time.Millisecond), store.Dialect())
}
