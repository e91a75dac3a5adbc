package activities

import "time"

// SetAdmissionTimes shortens the admission gate's lease (lease), how often a live process renews its leases
// (renew) and how often at most it reaps one SKU (reap), so that tests run in seconds. Call it first.
func (r *RedisStock) SetAdmissionTimes(lease, renew, reap time.Duration) {
	r.admission.lease, r.admission.renew, r.admission.reap = lease, renew, reap
	r.leases()
}

// Kill stops r's admission heartbeat without giving back what it counted, as a SIGKILL of its process would.
func (r *RedisStock) Kill() {
	l := r.leases()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.killed {
		l.killed = true
		close(l.stop)
	}
}

// SetClock sets the clock the store stamps its rows with and reads "now" from.
func (s *Store) SetClock(now func() time.Time) { s.now = now }
