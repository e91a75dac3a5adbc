package refundsim

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Faults are the shares of refund requests the simulator fails, answers too late, or refuses. Each is in [0, 1].
type Faults struct {
	// FailShare of requests are answered 503 with nothing executed (a random draw per request).
	FailShare float64 `json:"fail_share"`
	// TimeoutShare of the requests it answers with a refund (new or replayed) are executed, then never
	// answered: the client times out, and a retry replays the refund (a random draw per request).
	TimeoutShare float64 `json:"timeout_share"`
	// RefuseShare of idempotency keys are refused for good (422): the same keys for any seed or process.
	RefuseShare float64 `json:"refuse_share"`
}

// Settings are the faults as PUT and GET /v1/sim/faults carry them.
type Settings struct {
	Faults
	// BlackholeSeconds: in a PUT, > 0 starts a blackhole that long from now and 0 ends any; in an answer,
	// the seconds the blackhole has left (0: none).
	BlackholeSeconds float64 `json:"blackhole_seconds"`
}

// maxBlackhole bounds blackhole_seconds (a day: longer is a typing mistake).
const maxBlackhole = 24 * time.Hour

// timeoutHold is how long a lost answer is held when the client waits longer than any client should.
const timeoutHold = 2 * time.Minute

// Check names each share that is not in [0, 1] by its JSON name.
func (f Faults) Check() error {
	var errs []error
	for _, share := range []struct {
		name string
		v    float64
	}{{"fail_share", f.FailShare}, {"timeout_share", f.TimeoutShare}, {"refuse_share", f.RefuseShare}} {
		if !(share.v >= 0 && share.v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v: want a share between 0 and 1", share.name, share.v))
		}
	}
	return errors.Join(errs...)
}

func (s Settings) check() error {
	if !(s.BlackholeSeconds >= 0 && s.BlackholeSeconds <= maxBlackhole.Seconds()) {
		return errors.Join(s.Faults.Check(), fmt.Errorf("blackhole_seconds %v: want 0 to %v", s.BlackholeSeconds, maxBlackhole.Seconds()))
	}
	return s.Faults.Check()
}

// SetFaults replaces the shares, or changes nothing and names each share that is out of range.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	return nil
}

// Blackhole holds every refund request from now for d without executing it (d <= 0: ends a blackhole).
func (s *Server) Blackhole(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blackholeUntil = time.Now().Add(d)
}

// Faults answers the current settings.
func (s *Server) Faults() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Settings{Faults: s.faults, BlackholeSeconds: s.blackholeLeft().Seconds()}
}

func (s *Server) set(st Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = st.Faults
	s.blackholeUntil = time.Now().Add(time.Duration(st.BlackholeSeconds * float64(time.Second)))
}

// blackholeLeft is how long the blackhole lasts from now (0: none). The caller holds s.mu.
func (s *Server) blackholeLeft() time.Duration {
	return max(time.Until(s.blackholeUntil), 0)
}

// Refuses reports whether a simulator with these faults refuses the refund of key (an event ID) for good.
func (f Faults) Refuses(key string) bool { return refusedKey(key, f.RefuseShare) }

// refusedKey reports whether a share refuses key: its hash mapped onto [0, 1) is below the share, so a key
// is refused by every simulator with that share, and by every larger share.
func refusedKey(key string, share float64) bool {
	// SHA-256, not FNV: FNV's high bits barely differ between keys such as evt-1 and evt-2.
	h := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(h[:8])>>11)/(1<<53) < share
}

// draw reports whether a random draw falls in share. The caller holds s.mu.
func (s *Server) draw(share float64) bool {
	return share > 0 && s.rng.Float64() < share
}
