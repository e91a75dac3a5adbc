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

// The order saga's kill points, each in an activity of package activities (the refund sender's,
// RefundAfterSend, is in internal/refundsend).
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

// Points lists every kill point of the order saga, in the saga's order.
var Points = []string{ReserveAfterScript, DeductAfterCommit, CompensateMiddle}

// RefundAfterSend is in refundsend.Sender.Send (what the refund sender's activity SendRefund runs), right
// after the payment provider answered the refund and before it is marked sent: the provider has executed it,
// the database does not know. Its hits are named by the refund's payment event ID (where the saga's points
// name an order).
const RefundAfterSend = "refund-after-send"

// AllPoints is every point ORDERSAGA_KILL_AT accepts: the saga's and the refund sender's.
var AllPoints = append(slices.Clone(Points), RefundAfterSend)

// The environment variables read at process start.
const (
	EnvAt    = "ORDERSAGA_KILL_AT"
	EnvAfter = "ORDERSAGA_KILL_AFTER"
	// EnvSpare lists, comma-separated, the orders whose hits do not count: the chaos tool names there the
	// orders an earlier kill already hit, so that each kill crashes a worker in the middle of a new order (a
	// retried workflow task of the last victim is what a restarted worker picks up first).
	EnvSpare = "ORDERSAGA_KILL_SPARE"
)

// KillLine is how a process about to kill itself names the point and the order on stderr, before the
// SIGKILL: "killpoint: SIGKILL at <point> (hit <n>) order <order>".
const KillLine = "killpoint: SIGKILL at "

// ParseKillLine returns the point and the order named by a KillLine in line, if it holds one.
func ParseKillLine(line string) (point, order string, ok bool) {
	_, rest, ok := strings.Cut(line, KillLine)
	if !ok {
		return "", "", false
	}
	head, order, ok := strings.Cut(rest, " order ")
	point, _, _ = strings.Cut(head, " (hit ")
	point, order = strings.TrimSpace(point), strings.TrimSpace(order)
	return point, order, ok && point != "" && order != ""
}

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
	if !slices.Contains(AllPoints, at) {
		return Config{}, fmt.Errorf("%s=%q: want one of %s", EnvAt, at, strings.Join(AllPoints, ", "))
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
	spare   map[string]bool
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
		spare = map[string]bool{}
		for _, o := range strings.Split(os.Getenv(EnvSpare), ",") {
			if o = strings.TrimSpace(o); o != "" {
				spare[o] = true
			}
		}
		armed.Store(true)
	}
}

// Hit marks that the process reached the point name in the given order: it names the point and the order on
// stderr (KillLine) and sends itself SIGKILL when name is the configured point, the order is not spared and
// this is the point's configured hit. Without a configured point it is one atomic load.
func Hit(name, order string) {
	if !armed.Load() || name != setting.Point || spare[order] {
		return
	}
	if n := hits.Add(1); n == setting.After {
		fmt.Fprintf(os.Stderr, "%s%s (hit %d) order %s\n", KillLine, name, n, order)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught: nothing after this point runs
	}
}
