package placement

import (
	"context"
	"time"
)

// The line (the admission gate's Admit; the rule is its lua/line.lua) decides which request is placed next:
// a request that cannot be placed now holds a ticket in its SKUs' lines from its first arrival, shared by
// every API process, and is counted by the admission gate in its turn, oldest first. A request near the
// front (fewer than holdAhead live tickets ahead) waits in the server for its turn, for at most
// Config.LineHold, asking the line again every linePoll and when the line wakes it (Turn.Freed: the very
// front, when this process frees units of the SKU); any other is answered InLine (503 with its position, the
// estimated wait and a Retry-After) and keeps its ticket while it comes back in time. It holds nothing while
// it waits. The line answers sold out as soon as the SKU has fewer units left than the request asks for, and
// never while units it waits for are only being placed (the flash-sale tool's undersold check).

// DefaultLineHold is how long a request near the front of its line waits in the server for its turn by
// default, before it is answered InLine.
const DefaultLineHold = 2 * time.Second

// linePoll is how often a request held in the server asks its line again when this process frees nothing:
// every call sets its ticket's due time again, so it stays live in the line.
const linePoll = 200 * time.Millisecond

// holdAhead is how near the front a request must be to wait in the server (fewer live tickets ahead of it),
// whatever the line's pace (a slow pace tells even the next in line to come back in seconds).
const holdAhead = 16

// waitTurn waits for the request's turn in its SKUs' lines: *adm is set when admitted (ok, and also when Redis
// is unreachable and the database-only path is on: the placement goes on without the gate); else out is the
// answer: InLine, SoldOut (FastPath: nothing was done for the key) or Unavailable.
func (p *placement) waitTurn(ctx context.Context, marker string, adm **admitted) (out Outcome, ok bool) {
	hold := time.Now().Add(p.s.cfg.LineHold)
	ticket := ticket{ID: marker, Arrived: p.arrived}
	for {
		a, turn, err := p.stock.Admit(ctx, ticket, p.req.Lines, p.shards, p.s.cfg.PlaceTimeout+time.Minute)
		if err != nil {
			if p.redisFails(err) {
				return unavailable(serviceRedis, err), false
			}
			return Outcome{}, true
		}
		p.s.cfg.Line.Seen(turn)
		switch {
		case a != nil:
			*adm = a
			return Outcome{}, true
		case turn.SoldOut:
			return soldOut(turn.SKU, true), false
		}
		if turn.Position >= holdAhead || time.Now().After(hold) {
			return inLine(turn), false
		}
		t := time.NewTimer(linePoll)
		select {
		case <-turn.Freed: // nil (the timer only) but at the very front
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return inLine(turn), false
		}
		t.Stop()
	}
}

// admitClaimed admits the lines of a key with state whose order is not started (*adm is set), or finds the
// key's order started meanwhile (cur is its row, to attach to). When ok is false, out is the answer.
func (p *placement) admitClaimed(ctx context.Context, marker string, adm **admitted) (cur keyRecord, attach bool, out Outcome, ok bool) {
	out, ok = p.waitTurn(ctx, marker, adm)
	if ok || out.Kind == Unavailable {
		return cur, false, out, ok
	}
	// A refusal may only answer a key whose order is not started: the units that filled the line may be those
	// of the request that started this key's order since its row was read, which is attached to.
	cur, out, attach = p.refusedAfterClaim(ctx, out)
	if attach {
		return cur, true, Outcome{}, true
	}
	return cur, false, out, false
}
