package killpoint

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// The kill points, each placed in package activities.
const (
	// ReserveAfterScript is in ReserveLine, right after the Redis reserve script answered a hold, before the
	// activity returns.
	ReserveAfterScript = "reserve-after-script"
	// DeductAfterCommit is in DeductOrder, right after the deduct transaction committed, before the activity
	// returns.
	DeductAfterCommit = "deduct-after-commit"
	// CompensateMiddle is in RestoreOrder, right after the database restore committed and before the activity
	// returns: the compensation's Redis release (the next activity) has not run.
	CompensateMiddle = "compensate-middle"
)

// Points lists every kill point, in the saga's order.
var Points = []string{ReserveAfterScript, DeductAfterCommit, CompensateMiddle}

// The environment variables read at process start.
const (
	EnvAt    = "ORDERSAGA_KILL_AT"
	EnvAfter = "ORDERSAGA_KILL_AFTER"
)

// Config is a parsed kill setting: the point to kill at (empty: none) and at which of its hits.
type Config struct {
	Point string
	After int64
}

// Parse reads the values of ORDERSAGA_KILL_AT and ORDERSAGA_KILL_AFTER. An empty point is no kill point; an
// unknown point, or an after that is not a positive integer, is an error naming the variable.
func Parse(at, after string) (Config, error) {
	at = strings.TrimSpace(at)
	if at == "" {
		return Config{}, nil
	}
	if !slices.Contains(Points, at) {
		return Config{}, fmt.Errorf("%s=%q: want one of %s", EnvAt, at, strings.Join(Points, ", "))
	}
	c := Config{Point: at, After: 1}
	if v := strings.TrimSpace(after); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("%s=%q: want a positive integer", EnvAfter, v)
		}
		c.After = n
	}
	return c, nil
}

// The process's kill setting, read once by init; armed is false unless a point is set.
var (
	armed   atomic.Bool
	setting Config
	hits    atomic.Int64
)

func init() {
	c, err := Parse(os.Getenv(EnvAt), os.Getenv(EnvAfter))
	if err != nil {
		// A chaos run that asked for a kill and would silently get none is worse than no run.
		fmt.Fprintln(os.Stderr, "killpoint:", err)
		os.Exit(2)
	}
	if c.Point != "" {
		setting = c
		armed.Store(true)
	}
}

// Hit marks that the process reached the point name: it sends itself SIGKILL when name is the configured
// point and this is its configured hit. Without a configured point it is one atomic load.
func Hit(name string) {
	if !armed.Load() || name != setting.Point {
		return
	}
	if hits.Add(1) == setting.After {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught: nothing after this point runs
	}
}
