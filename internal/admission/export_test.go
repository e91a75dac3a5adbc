package admission

import (
	"context"
	"time"

	"github.com/ordersaga/ordersaga"
)

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

// SetCheckLinger sets how long an idle CheckOrder sender waits for more work before it ends. Call it first.
func (r *Gate) SetCheckLinger(d time.Duration) { r.checks.linger = d }

// CheckSenders is how many CheckOrder senders run, and how many of them wait idle.
func (r *Gate) CheckSenders() (running, idle int) {
	r.checks.mu.Lock()
	defer r.checks.mu.Unlock()
	return r.checks.senders, r.checks.idle
}

// AdmitNow is Admit without a ticket (admitted only behind every live ticket), the SKU refused as a string.
func (r *Gate) AdmitNow(ctx context.Context, lines []ordersaga.Line, ttl time.Duration) (*Admission, string, error) {
	a, turn, err := r.Admit(ctx, Ticket{}, lines, nil, ttl)
	if turn.Admitted {
		return a, "", err
	}
	return a, turn.SKU, err
}
