package placement

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/workflows"
)

// DefaultPlaceTimeout is how long a placement waits for its reservation to be decided by default: the
// reservation's activities give up within ~30 s.
const DefaultPlaceTimeout = 40 * time.Second

// DefaultMaxPlacing is how many Update-with-Start calls a process has in flight at most by default.
const DefaultMaxPlacing = 48

// DefaultRetention is how long an Idempotency-Key is remembered by default (IDEMPOTENCY_RETENTION).
const DefaultRetention = 24 * time.Hour

// markerSlack is how much longer than its row's life a key's marker lives: a marker may outlive its row
// (the key only misses the sold-out fast path) but must not expire before it, whatever the clocks of Redis
// and the database say.
const markerSlack = time.Minute

// Counter counts events (a prometheus.Counter is one).
type Counter interface{ Inc() }

// Gauge is a count that goes up and down (a prometheus.Gauge is one).
type Gauge interface{ Add(float64) }

// LineMetrics observes what the lines answered (Turn): the admissions and their waits, the
// tickets found abandoned, the lines' lengths.
type LineMetrics interface{ Seen(Turn) }

type noLineMetrics struct{}

func (noLineMetrics) Seen(Turn) {}

// noGauge is the Gauge of a count nobody reads.
type noGauge struct{}

func (noGauge) Add(float64) {}

// Config is what the service needs; the stores and clients are the process's, shared.
type Config struct {
	Logger   *slog.Logger // nil: discard
	Temporal client.Client
	Store    Store
	Stock    Stock
	// Currency is the ISO 4217 code of every order (CURRENCY).
	Currency string
	// PaymentTimeout is how long a new order waits for payment (0 = the workflow's default).
	PaymentTimeout time.Duration
	// PlaceTimeout bounds the wait for a reservation to be decided (0 = DefaultPlaceTimeout).
	PlaceTimeout time.Duration
	// KeepAs turns a reserved order into the first answer its client gets, which the service keeps for the
	// key's replays (required: the caller owns the answer's form).
	KeepAs func(ordersaga.Order) Answer
	// Retention is how long a key is remembered after its last use (IDEMPOTENCY_RETENTION; 0 =
	// DefaultRetention), and while its order may be open: after it the key is a new request, with a new
	// order ID.
	Retention time.Duration
	// MaxPlacing bounds the Update-with-Start calls this process has in flight (0 = DefaultMaxPlacing); the
	// placements past it wait for one to end. The line bounds how many wait (admission.LineRules.PerSKU).
	MaxPlacing int
	// LineHold is how long a request near the front of its line waits in the server for its turn before it is
	// answered InLine (0 = DefaultLineHold; gate.go).
	LineHold time.Duration
	// Line observes the lines' answers (nil: nobody does): the operators' metrics.
	Line LineMetrics
	// Places counts the Update-with-Start calls: the workflows started or attached to (nil: not counted).
	Places Counter
	// InFlight is the Update-with-Start calls in flight (at most MaxPlacing), Waiting the placements admitted
	// and waiting for one of them (nil: not kept).
	InFlight, Waiting Gauge
	// RedisDownFallback places orders through the database alone while Redis is unreachable
	// (RESERVE_DB_FALLBACK): no fast path, no admission gate, the reserve's database-only path in the worker,
	// and the markers' fence until the keys claimed meanwhile are marked. Off: such a request is Unavailable.
	RedisDownFallback bool
}

// Service places orders (Place) and runs their background work (Run).
type Service struct {
	cfg Config
	// known caches SKUs seen in the inventory table: SKUs are never deleted, so a positive answer stays true.
	known sync.Map
	// placing shares one Update-with-Start among the concurrent requests for one order ID.
	placing singleflight.Group
	// filling is true while this process backfills the idempotency markers of the sold-out fast path.
	filling atomic.Bool
	// bg is the context of the background work (the backfill); stopBG cancels it, and bgWork counts what runs.
	bg     context.Context
	stopBG context.CancelFunc
	bgMu   sync.Mutex // orders a start of background work before Run's stop, or after it (none starts)
	bgWork sync.WaitGroup
	// fence is this process's copy of the markers' fence; fenceReads shares one read among concurrent requests.
	fence      fenceState
	fenceReads singleflight.Group
	// slots bounds the Update-with-Start calls in flight (Config.MaxPlacing).
	slots chan struct{}
	// life is how long a key's row lives after its last use (sqlstore.IdempotencyLife of the retention).
	life time.Duration
}

// New returns the service. It starts nothing: the markers' backfill starts with Backfill, or when a
// placement finds the markers not ready.
func New(cfg Config) *Service {
	if cfg.KeepAs == nil {
		panic("placement: Config.KeepAs is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PlaceTimeout <= 0 {
		cfg.PlaceTimeout = DefaultPlaceTimeout
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.PaymentTimeout <= 0 {
		cfg.PaymentTimeout = workflows.DefaultPaymentTimeout
	}
	if cfg.MaxPlacing <= 0 {
		cfg.MaxPlacing = DefaultMaxPlacing
	}
	if cfg.LineHold <= 0 {
		cfg.LineHold = DefaultLineHold
	}
	if cfg.Line == nil {
		cfg.Line = noLineMetrics{}
	}
	if cfg.InFlight == nil {
		cfg.InFlight = noGauge{}
	}
	if cfg.Waiting == nil {
		cfg.Waiting = noGauge{}
	}
	s := &Service{cfg: cfg, slots: make(chan struct{}, cfg.MaxPlacing), life: keyLife(cfg.Retention)}
	s.bg, s.stopBG = context.WithCancel(context.Background())
	return s
}

// takeSlot takes one of the Update-with-Start calls in flight (slots), waiting for one while ctx lasts;
// false: ctx ended first. freeSlot gives it back.
func (s *Service) takeSlot(ctx context.Context) bool {
	s.cfg.Waiting.Add(1)
	defer s.cfg.Waiting.Add(-1)
	select {
	case s.slots <- struct{}{}:
		s.cfg.InFlight.Add(1)
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Service) freeSlot() {
	s.cfg.InFlight.Add(-1)
	<-s.slots
}

// markerOf is the marker of a key's row last used age ago: named name (the key's MarkerName), valued with the life's
// nonce, and living a little longer than the row has left. isNew: the caller has just written that life or
// its last use (its marker replaces an earlier life's; otherwise it is set only where there is none, or made
// to live as long where it carries the same life).
func (s *Service) markerOf(name, nonce string, age time.Duration, isNew bool) marker {
	return marker{Name: name, Nonce: nonce, TTL: max(s.life-age, 0) + markerSlack, New: isNew}
}

// Known records that sku is in the inventory table (its admin just set it), sparing a placement the lookup.
func (s *Service) Known(sku string) { s.known.Store(sku, true) }

// Run returns once ctx is done and the service's background work has stopped (a backfill in progress is
// cancelled; none starts after). The process runs it beside its server and waits for it before it exits. A
// service whose Run is never called keeps its background work until the process ends.
func (s *Service) Run(ctx context.Context) error {
	<-ctx.Done()
	s.bgMu.Lock()
	s.stopBG()
	s.bgMu.Unlock()
	s.bgWork.Wait()
	return nil
}

// unknownSKU returns the first SKU of lines that is not in the inventory table ("" when all exist).
func (s *Service) unknownSKU(ctx context.Context, lines []ordersaga.Line) (string, error) {
	var ask []string
	for _, l := range lines {
		if _, ok := s.known.Load(l.SKU); !ok {
			ask = append(ask, l.SKU)
		}
	}
	if len(ask) == 0 {
		return "", nil
	}
	found, err := s.cfg.Store.KnownSKUs(ctx, ask)
	if err != nil {
		return "", err
	}
	for _, sku := range ask {
		if !found[sku] {
			return sku, nil
		}
		s.known.Store(sku, true)
	}
	return "", nil
}
