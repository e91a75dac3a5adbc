package activities_test

// The Redis-down breaker (issue 17, item 3): only a Redis call that could not reach Redis trips it and sends a
// reserve to the database alone. A database error of the cold load, a pool that is exhausted at peak, or the
// activity's own deadline leave Redis as the gate: the reserve fails (retryably), and the next reserve on the
// same worker still goes to Redis.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// brkReserve runs ReserveLine in an activity environment of its own; bg, when set, is the context the
// activity's context derives from (a deadline on it is the activity's deadline). The breaker is acts's.
func brkReserve(t *testing.T, acts *activities.Activities, bg context.Context, order, sku string) (ordersaga.ReserveOutcome, error) {
	t.Helper()
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	if bg != nil {
		aenv.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
	}
	aenv.RegisterActivity(acts)
	v, err := aenv.ExecuteActivity(acts.ReserveLine, activities.LineInput{OrderID: order, SKU: sku, Qty: 1})
	if err != nil {
		return "", err
	}
	var out ordersaga.ReserveOutcome
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// brkFailsRetryably checks that a reserve failed, retryably, without answering db_only; wantType, when set,
// is the application error's type.
func brkFailsRetryably(t *testing.T, what string, out ordersaga.ReserveOutcome, err error, wantType string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: reserve = %q, want a retryable error (Redis is healthy: no database-only reserve)", what, out)
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) && wantType == "" {
		return // the activity's deadline passed first: Temporal retries the attempt
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("%s: reserve error %v (%T) is not an application error", what, err, err)
	}
	if appErr.NonRetryable() {
		t.Errorf("%s: reserve error %v is not retryable", what, err)
	}
	if wantType != "" && appErr.Type() != wantType {
		t.Errorf("%s: reserve error type %q, want %q (%v)", what, appErr.Type(), wantType, err)
	}
}

// brkStillOnRedis checks that the breaker did not trip: a reserve of another, loaded SKU on the same
// Activities holds its unit in Redis.
func brkStillOnRedis(t *testing.T, acts *activities.Activities, rs *redisstock.Store, sku string) {
	t.Helper()
	ctx := t.Context()
	before, _, err := rs.Available(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	out, err := brkReserve(t, acts, nil, "next-"+testenv.RandomID(3), sku)
	if err != nil || out != ordersaga.Reserved {
		t.Fatalf("next reserve of %s = %q, %v; want %q from Redis (the breaker must not have tripped)", sku, out, err, ordersaga.Reserved)
	}
	if after, _, err := rs.Available(ctx, sku); err != nil || after != before-1 {
		t.Errorf("%s avail %d -> %d (%v): the next reserve did not hold its unit in Redis", sku, before, after, err)
	}
}

// brkNoMarks checks that no reserve went to the database alone (no re-sync mark).
func brkNoMarks(t *testing.T, store *sqlstore.Store) {
	t.Helper()
	rows, err := store.Anomalies(context.Background(), sqlstore.FallbackRunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Errorf("re-sync marks %+v: a reserve fell back to the database with Redis healthy", rows)
	}
}

// brkFailReadsOf makes every read of the store that names sku fail with err (as the driver's error), until
// the returned function is called.
func brkFailReadsOf(t *testing.T, store *sqlstore.Store, sku string, err error) func() {
	t.Helper()
	var on atomic.Bool
	on.Store(true)
	if rerr := store.DB().Callback().Row().Before("gorm:row").Register("breaker_test:fail:"+sku, func(db *gorm.DB) {
		if !on.Load() {
			return
		}
		for _, v := range db.Statement.Vars {
			if s, ok := v.(string); ok && s == sku {
				_ = db.AddError(err)
				return
			}
		}
	}); rerr != nil {
		t.Fatal(rerr)
	}
	return func() { on.Store(false) }
}

// brkClosedAddr is an address nothing listens on.
func brkClosedAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.StablePort(t, "127.0.0.1")))
}

// brkMySQLDialError is what the MySQL driver returns when it cannot reach its server: a *net.OpError, the
// same shape as a Redis dial error.
func brkMySQLDialError(t *testing.T) error {
	t.Helper()
	db, err := sql.Open("mysql", "root@tcp("+brkClosedAddr(t)+")/test?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.PingContext(t.Context())
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Fatalf("mysql ping of a closed port = %v (%T), want a *net.OpError", err, err)
	}
	return err
}

// brkTestRedisAddr is the address of the test's Redis (REDIS_ADDR's server or a miniredis) and the key prefix
// of the test.
func brkTestRedisAddr(t *testing.T) (string, string) {
	t.Helper()
	rdb, prefix := testenv.RedisClient(t)
	c, ok := rdb.(*redis.Client)
	if !ok {
		t.Fatalf("test redis client is a %T", rdb)
	}
	return c.Options().Addr, prefix
}

// (a) A cold load that fails on the database does not trip the breaker: the not-loaded SKU fails closed
// (NotLoaded, retryable) and the next reserve of another SKU still goes to Redis.
func TestReserveLine_ColdLoadDatabaseErrorKeepsRedisTheGate(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*sqlstore.Store, *redisstock.Store, *activities.Activities) {
		ctx := t.Context()
		store := testenv.MustOpenStore(t)
		rs := testenv.MustOpenRedis(t)
		for _, sku := range []string{"COLD", "HOT"} {
			if err := store.SetInventory(ctx, sku, 10, 100); err != nil {
				t.Fatal(err)
			}
		}
		if err := rs.SetAvailable(ctx, "HOT", 10); err != nil { // COLD is not loaded
			t.Fatal(err)
		}
		return store, rs, &activities.Activities{Redis: rs, Store: store, DBFallback: true}
	}

	// The database cannot be reached: the MySQL driver's dial error is a *net.OpError, like Redis's.
	t.Run("database_unreachable", func(t *testing.T) {
		t.Parallel()
		store, rs, acts := setup(t)
		restore := brkFailReadsOf(t, store, "COLD", brkMySQLDialError(t))
		out, err := brkReserve(t, acts, nil, "o-cold", "COLD")
		brkFailsRetryably(t, "cold load on an unreachable database", out, err, activities.ErrTypeNotLoaded)
		brkStillOnRedis(t, acts, rs, "HOT")
		restore()
		brkNoMarks(t, store)
		if _, loaded, _ := rs.Available(t.Context(), "COLD"); loaded {
			t.Error("COLD was loaded although its database read failed")
		}
	})

	// The cold load waits for a hot row's lock (another transaction holds it) past the activity's deadline:
	// the database answers with the context's deadline.
	t.Run("lock_wait_past_the_deadline", func(t *testing.T) {
		if !testenv.RealMySQL() {
			t.Skip("SQLite does not end a lock wait at the context's deadline (it answers SQLITE_BUSY after its busy timeout)")
		}
		t.Parallel()
		store, rs, acts := setup(t)
		release := brkHoldInventoryLock(t, store, "COLD")
		bg, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		out, err := brkReserve(t, acts, bg, "o-cold", "COLD")
		brkFailsRetryably(t, "cold load past its deadline on a row lock", out, err, "")
		release()
		brkStillOnRedis(t, acts, rs, "HOT")
		brkNoMarks(t, store)
		// The retry, with the lock gone, loads COLD and holds its unit in Redis.
		if out, err := brkReserve(t, acts, nil, "o-cold", "COLD"); err != nil || out != ordersaga.Reserved {
			t.Errorf("retry of the cold reserve = %q, %v; want %q", out, err, ordersaga.Reserved)
		}
	})
}

// brkHoldInventoryLock takes the lock of sku's inventory row (MySQL: SELECT ... FOR UPDATE in a transaction of
// its own), which the cold load's locking read waits for, and returns its release.
func brkHoldInventoryLock(t *testing.T, store *sqlstore.Store, sku string) func() {
	t.Helper()
	ctx := t.Context()
	sqlDB, err := store.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { _ = tx.Rollback() }) }
	t.Cleanup(release)
	var stock int64
	if err := tx.QueryRowContext(ctx, "SELECT stock FROM inventory WHERE sku = ? FOR UPDATE", sku).Scan(&stock); err != nil {
		t.Fatal(err)
	}
	return release
}

// (b) Redis's connection pool is exhausted at peak: Redis answers the other callers, so the reserve fails
// retryably and the next one still goes to Redis.
func TestReserveLine_RedisPoolExhaustionKeepsRedisTheGate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		poolTimeout time.Duration
		deadline    time.Duration // the activity's deadline (0: none)
		wantErr     string
	}{
		{name: "pool_timeout", poolTimeout: 100 * time.Millisecond, wantErr: "connection pool timeout"},
		// The activity's deadline passes while the reserve waits for a connection: a context deadline
		// that no Redis connection returned.
		{name: "deadline_waiting_for_a_connection", poolTimeout: time.Minute, deadline: 500 * time.Millisecond,
			wantErr: "context deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			store := testenv.MustOpenStore(t)
			addr, prefix := brkTestRedisAddr(t)
			one := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, PoolTimeout: c.poolTimeout})
			t.Cleanup(func() { one.Close() })
			rs := redisstock.New(one, prefix, 0)
			for _, sku := range []string{"PEAK", "NEXT"} {
				if err := store.SetInventory(ctx, sku, 10, 100); err != nil {
					t.Fatal(err)
				}
				if err := rs.SetAvailable(ctx, sku, 10); err != nil {
					t.Fatal(err)
				}
			}
			acts := &activities.Activities{Redis: rs, Store: store, DBFallback: true}

			held := one.Conn() // the pool's one connection, busy elsewhere
			if err := held.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			bg := context.Background()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				bg, cancel = context.WithTimeout(bg, c.deadline)
				defer cancel()
			}
			out, err := brkReserve(t, acts, bg, "o-peak", "PEAK")
			brkFailsRetryably(t, "reserve with the pool exhausted", out, err, "")
			if err != nil && !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("reserve error %q, want it to say %q", err, c.wantErr)
			}
			if err := held.Close(); err != nil {
				t.Fatal(err)
			}
			brkStillOnRedis(t, acts, rs, "NEXT")
			brkNoMarks(t, store)
		})
	}
}

// (c) Redis that cannot be reached still sends the reserve to the database alone when the fallback is on,
// however the connection fails, and also when Redis goes away between the reserve and the cold load.
func TestReserveLine_UnreachableRedisStillFallsBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		server func(t *testing.T) string // the address the client dials
		opts   redis.Options
	}{
		{name: "connection_refused", server: brkClosedAddr},
		{name: "closed_on_accept", server: func(t *testing.T) string { return testenv.HangUpAddr(t) }},
		{name: "never_answers", server: brkNeverAnswers, opts: redis.Options{ReadTimeout: 200 * time.Millisecond, MaxRetries: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := testenv.MustOpenStore(t)
			if err := store.SetInventory(t.Context(), "DOWN", 5, 100); err != nil {
				t.Fatal(err)
			}
			opts := c.opts
			opts.Addr = c.server(t)
			opts.DialTimeout = 500 * time.Millisecond
			rdb := redis.NewClient(&opts)
			t.Cleanup(func() { rdb.Close() })
			acts := &activities.Activities{Redis: redisstock.New(rdb, "", 0), Store: store, DBFallback: true}
			if out, err := brkReserve(t, acts, nil, "o-down", "DOWN"); err != nil || out != ordersaga.ReservedInDB {
				t.Fatalf("reserve with Redis unreachable = %q, %v; want %q", out, err, ordersaga.ReservedInDB)
			}
			if rows, err := store.Anomalies(t.Context(), sqlstore.FallbackRunID); err != nil || len(rows) != 1 {
				t.Errorf("re-sync marks = %+v, %v; want one", rows, err)
			}
		})
	}

	// Redis answers the reserve (not loaded) and is gone when the cold load asks it.
	for _, fallback := range []bool{true, false} {
		t.Run(fmt.Sprintf("gone_before_the_cold_load/fallback=%v", fallback), func(t *testing.T) {
			t.Parallel()
			store := testenv.MustOpenStore(t)
			if err := store.SetInventory(t.Context(), "GONE", 5, 100); err != nil {
				t.Fatal(err)
			}
			addr, prefix := brkTestRedisAddr(t)
			proxy := brkStartProxy(t, addr)
			rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), DialTimeout: 500 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			rdb.AddHook(brkCutAfterReserve{proxy: proxy})
			acts := &activities.Activities{Redis: redisstock.New(rdb, prefix, 0), Store: store, DBFallback: fallback}
			out, err := brkReserve(t, acts, nil, "o-gone", "GONE")
			if !proxy.isCut() {
				t.Fatal("the reserve script never answered through the proxy")
			}
			if fallback {
				if err != nil || out != ordersaga.ReservedInDB {
					t.Fatalf("reserve with Redis gone before the cold load = %q, %v; want %q", out, err, ordersaga.ReservedInDB)
				}
				return
			}
			brkFailsRetryably(t, "reserve with Redis gone and the fallback off", out, err, activities.ErrTypeNotLoaded)
		})
	}
}

// brkNeverAnswers is a server that accepts connections and never writes a byte.
func brkNeverAnswers(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) //nolint:errcheck // read and drop what the client sends
		}
	}()
	return ln.Addr().String()
}

// brkProxy forwards TCP connections to a Redis server until it is cut: then it stops listening and drops
// every connection, as a Redis that went away would.
type brkProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func brkStartProxy(t *testing.T, target string) *brkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &brkProxy{ln: ln, target: target}
	t.Cleanup(p.cutNow)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *brkProxy) addr() string { return p.ln.Addr().String() }

func (p *brkProxy) cutNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *brkProxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// brkCutAfterReserve cuts the proxy once the reserve script has answered.
type brkCutAfterReserve struct{ proxy *brkProxy }

func (h brkCutAfterReserve) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h brkCutAfterReserve) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			h.proxy.cutNow()
		}
		return err
	}
}

func (h brkCutAfterReserve) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// brkRedisError is the error of a go-redis GET against addr, with opts (no retries unless opts say so).
func brkRedisError(t *testing.T, addr string, opts redis.Options) error {
	t.Helper()
	opts.Addr = addr
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	rdb := redis.NewClient(&opts)
	defer rdb.Close()
	err := rdb.Get(t.Context(), "k").Err()
	if err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("redis GET against %s answered (%v)", addr, err)
	}
	return err
}

// brkRedisPoolTimeout is the error of a go-redis call that waited for a pool whose one connection is held.
func brkRedisPoolTimeout(t *testing.T) error {
	t.Helper()
	addr, _ := brkTestRedisAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, PoolTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	held := rdb.Conn()
	defer held.Close()
	if err := held.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb.Get(t.Context(), "k").Err()
}

// (d) IsUnreachable counts only errors that a Redis call returned (FromRedis) and that say the connection
// failed; a database error of the same shape, pool exhaustion, a deadline no connection returned and
// Redis's answers do not count.
func TestIsUnreachable_OnlyARedisConnectionFailure(t *testing.T) {
	t.Parallel()
	mysqlDial := brkMySQLDialError(t)
	refused := brkRedisError(t, brkClosedAddr(t), redis.Options{})
	eof := brkRedisError(t, testenv.HangUpAddr(t), redis.Options{})
	readTimeout := brkRedisError(t, brkNeverAnswers(t), redis.Options{ReadTimeout: 100 * time.Millisecond})
	dialTimeout := brkRedisError(t, brkNeverAnswers(t), redis.Options{DialTimeout: time.Nanosecond, DialerRetries: 1})
	poolTimeout := brkRedisPoolTimeout(t)
	for _, e := range []struct {
		name string
		err  error
		want string
	}{
		{"refused", refused, "connection refused"},
		{"dial timeout", dialTimeout, "i/o timeout"},
		{"read timeout", readTimeout, "i/o timeout"},
		{"pool timeout", poolTimeout, "connection pool timeout"},
	} {
		if e.err == nil || !strings.Contains(e.err.Error(), e.want) {
			t.Fatalf("%s: go-redis returned %v, want an error saying %q", e.name, e.err, e.want)
		}
	}
	if !errors.Is(dialTimeout, context.DeadlineExceeded) {
		t.Fatalf("a go-redis dial timeout (%v) is not a context.DeadlineExceeded: the table below expects one", dialTimeout)
	}
	canceledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	_, canceledDial := (&net.Dialer{}).DialContext(canceledCtx, "tcp", brkClosedAddr(t))
	// What ReserveLine saw before the fix when a cold load failed on the database: Redis's "not loaded"
	// answer joined with the database's error.
	joined := errors.Join(fmt.Errorf("reserve COLD: %w", ordersaga.ErrNotLoaded), fmt.Errorf("max ledger id COLD: %w", mysqlDial))

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"redis: nil from redis", redisstock.FromRedis(nil), false},

		// A Redis call that could not reach Redis.
		{"redis: connection refused (go-redis)", redisstock.FromRedis(refused), true},
		{"redis: wrapped connection refused", redisstock.FromRedis(fmt.Errorf("reserve X: %w", refused)), true},
		{"redis: dial timeout (go-redis)", redisstock.FromRedis(dialTimeout), true},
		{"redis: read i/o timeout (go-redis)", redisstock.FromRedis(readTimeout), true},
		{"redis: EOF from a closed connection (go-redis)", redisstock.FromRedis(eof), true},
		{"redis: EOF", redisstock.FromRedis(fmt.Errorf("reserve X: %w", io.EOF)), true},
		{"redis: unexpected EOF", redisstock.FromRedis(io.ErrUnexpectedEOF), true},
		{"redis: connection reset", redisstock.FromRedis(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"redis: broken pipe", redisstock.FromRedis(fmt.Errorf("x: %w", syscall.EPIPE)), true},
		{"redis: LOADING", redisstock.FromRedis(fmt.Errorf("reserve X: %w", brkRedisReply("LOADING Redis is loading the dataset in memory"))), true},
		{"redis: MASTERDOWN", redisstock.FromRedis(brkRedisReply("MASTERDOWN Link with MASTER is down")), true},
		{"redis: TRYAGAIN", redisstock.FromRedis(brkRedisReply("TRYAGAIN Multiple keys request during rehashing")), true},

		// Redis answered, or the client gave up before asking it.
		{"redis: pool timeout (go-redis)", redisstock.FromRedis(poolTimeout), false},
		{"redis: wrapped pool timeout", redisstock.FromRedis(fmt.Errorf("reserve X: %w", redis.ErrPoolTimeout)), false},
		{"redis: pool exhausted", redisstock.FromRedis(redis.ErrPoolExhausted), false},
		{"redis: deadline waiting for a connection", redisstock.FromRedis(fmt.Errorf("reserve X: %w", context.DeadlineExceeded)), false},
		{"redis: canceled", redisstock.FromRedis(context.Canceled), false},
		{"redis: dial canceled", redisstock.FromRedis(canceledDial), false},
		{"redis: client closed", redisstock.FromRedis(redis.ErrClosed), false},
		{"redis: nil reply", redisstock.FromRedis(redis.Nil), false},
		{"redis: error reply", redisstock.FromRedis(brkRedisReply("ERR something")), false},
		{"redis: not loaded", redisstock.FromRedis(fmt.Errorf("reserve X: %w", ordersaga.ErrNotLoaded)), false},

		// Not a Redis call's error: never, whatever its shape.
		{"db: mysql dial refused", mysqlDial, false},
		{"db: wrapped mysql dial refused", fmt.Errorf("read truth X: %w", mysqlDial), false},
		{"db: redis not-loaded joined with a mysql dial error", joined, false},
		{"db: deadline", fmt.Errorf("read truth X: %w", context.DeadlineExceeded), false},
		{"db: EOF", io.EOF, false},
		{"unmarked go-redis refusal", refused, false},
	} {
		if got := redisstock.IsUnreachable(c.err); got != c.want {
			t.Errorf("%s: IsUnreachable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// brkRedisReply is an error reply of the Redis server (go-redis's proto.RedisError implements redis.Error).
type brkRedisReply string

func (e brkRedisReply) Error() string { return string(e) }
func (brkRedisReply) RedisError()     {}
