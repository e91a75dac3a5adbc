package admission

// Renewals is how many times r's heartbeat has renewed every lease it holds, and whether the heartbeat still
// runs (it ends when r counts no units and owes none, or when r is killed): a test that moves a clock waits
// for the next renewal first, so that a lease expires only for a process that stopped renewing it.
func (r *Gate) Renewals() (n int64, beating bool) {
	l := r.leases()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals.Load(), l.beating && !l.killed
}
