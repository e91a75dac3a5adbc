package refundsim

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// LocalStackSecret is the refund secret of the local stack: what `paysim serve` checks signatures with when
// REFUND_PROVIDER_SECRET is unset. (A development default: it protects nothing.)
const LocalStackSecret = "dev-refund-secret"

// Options configure a simulator.
type Options struct {
	// Secrets are the HMAC secrets a request may be signed with (several during a rotation); at least one.
	Secrets []string
	// Faults are injected from the start (SetFaults changes them).
	Faults Faults
	// Seed seeds the fail and timeout draws (0: from the clock).
	Seed int64
	// Now is the clock of signatures and of created_at (nil: time.Now). Waits use the real clock.
	Now func() time.Time
	// Log gets one line per refund request: event ID, status, outcome; never a secret (nil: no log).
	Log *slog.Logger
}

// Server is the simulated provider, an http.Handler. Every refund it executed is executed once per
// idempotency key, whatever the concurrency, and stays in memory for its life.
type Server struct {
	secrets []string
	now     func() time.Time
	log     *slog.Logger
	mux     *http.ServeMux
	closed  chan struct{}
	close   sync.Once

	mu             sync.Mutex
	rng            *rand.Rand
	faults         Faults
	blackholeUntil time.Time
	refunds        map[string]*Entry   // executed, by idempotency key
	refused        map[string]*Refusal // refused for good, by idempotency key
	requests       map[string]int      // requests per key that passed the signature and body checks
	totals         Totals
}

// New returns a simulator, or an error naming the option that is wrong.
func New(o Options) (*Server, error) {
	if len(o.Secrets) == 0 {
		return nil, errors.New("refundsim: Secrets is empty: want at least one secret to check signatures with")
	}
	for _, s := range o.Secrets {
		if strings.TrimSpace(s) == "" {
			return nil, errors.New("refundsim: Secrets holds an empty secret")
		}
	}
	if err := o.Faults.Check(); err != nil {
		return nil, err
	}
	seed := uint64(o.Seed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	s := &Server{
		secrets:  append([]string(nil), o.Secrets...),
		now:      o.Now,
		log:      o.Log,
		closed:   make(chan struct{}),
		rng:      rand.New(rand.NewPCG(seed, seed>>1|1)),
		faults:   o.Faults,
		refunds:  map[string]*Entry{},
		refused:  map[string]*Refusal{},
		requests: map[string]int{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.mux = s.routes()
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close releases the requests the simulator holds, and holds none from then on (a blackhole answers 503 at
// once, a lost answer is dropped at once), so that an http.Server's Shutdown does not wait for them.
func (s *Server) Close() {
	s.close.Do(func() { close(s.closed) })
}
