package platform

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/workflows"
)

// ReconcileConfig is reconciliation's settings. Each field names its variable.
type ReconcileConfig struct {
	// Interval between scheduled runs.
	Interval time.Duration // RECONCILE_INTERVAL (default 1m)
	// BatchSize is the SKUs (and open orders) one activity handles.
	BatchSize int // RECONCILE_BATCH (default 200)
	// Grace: holds and open orders younger than this are left alone.
	Grace time.Duration // RECONCILE_GRACE (default 2m)
	// DBFallback lets a reserve fall back to the database deduct alone when Redis is unreachable.
	DBFallback bool // RESERVE_DB_FALLBACK (default true)
}

// ReconcileConfigFromEnv reads the settings through getenv, naming the variable in every error.
func ReconcileConfigFromEnv(getenv func(string) string) (ReconcileConfig, error) {
	c := ReconcileConfig{
		Interval:   workflows.DefaultReconcileInterval,
		BatchSize:  workflows.DefaultReconcileBatch,
		Grace:      workflows.DefaultReconcileGrace,
		DBFallback: true,
	}
	var errs []error
	dur := func(name string, dst *time.Duration, lo time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo {
			errs = append(errs, fmt.Errorf("%s=%q: want a Go duration of at least %s, e.g. 1m", name, v, lo))
			return
		}
		*dst = d
	}
	dur("RECONCILE_INTERVAL", &c.Interval, time.Second)
	dur("RECONCILE_GRACE", &c.Grace, time.Second)
	if v := strings.TrimSpace(getenv("RECONCILE_BATCH")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			errs = append(errs, fmt.Errorf("RECONCILE_BATCH=%q: want an integer between 1 and 10000", v))
		} else {
			c.BatchSize = n
		}
	}
	if v := strings.TrimSpace(getenv("RESERVE_DB_FALLBACK")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("RESERVE_DB_FALLBACK=%q: want true or false", v))
		} else {
			c.DBFallback = b
		}
	}
	return c, errors.Join(errs...)
}

// Input is the workflow input the settings describe.
func (c ReconcileConfig) Input() workflows.ReconcileInput {
	return workflows.ReconcileInput{BatchSize: c.BatchSize, Grace: c.Grace}
}
