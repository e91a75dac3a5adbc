package admission

import "time"

// SetAdmissionTimes shortens the admission gate's lease (lease), how often a live process renews its leases
// (renew) and how often at most it reaps one SKU (reap), so that tests run in seconds. Call it first.
func (r *Gate) SetAdmissionTimes(lease, renew, reap time.Duration) {
	r.admission.lease, r.admission.renew, r.admission.reap = lease, renew, reap
	r.leases()
}

// Kill stops r's admission heartbeat without giving back what it counted, as a SIGKILL of its process would.
func (r *Gate) Kill() {
	l := r.leases()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.killed {
		l.killed = true
		close(l.stop)
	}
}
