package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/ordersaga/ordersaga/internal/config"
)

const (
	// temporalServices run in the temporal container (frontend, history, matching, worker); each opens a pool
	// of its own to each store (the server's temporal/fx.go gives every service its persistence factory).
	temporalServices = 4
	// plannedWorkers is the scale MySQL is sized for: `docker compose up --scale worker=3`.
	plannedWorkers = 3
	// adminConnections: the mysql client, a backup, the flash-sale tool's read-only DSN.
	adminConnections = 10
)

// maxConnections reads --max-connections (or --max_connections) from the mysql service's command.
func maxConnections(t *testing.T, svc types.ServiceConfig) int {
	t.Helper()
	flag := regexp.MustCompile(`^--max[-_]connections=(\d+)$`)
	for _, arg := range svc.Command {
		if m := flag.FindStringSubmatch(arg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatalf("mysql: no --max-connections in its command %q: MySQL's default of 151 is below the pools", svc.Command)
	return 0
}

func intVariable(t *testing.T, svc types.ServiceConfig, name, variable string) int {
	t.Helper()
	v, ok := environment(svc)[variable]
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n <= 0 {
		t.Fatalf("%s: %s=%q: want it set to a pool size (the server's own default would size MySQL silently)", name, variable, v)
	}
	return n
}

// connectionBudget is what every pool of the stack may open at once, with the arithmetic spelt out.
func connectionBudget(t *testing.T, p *types.Project) (int, string) {
	t.Helper()
	temporal := p.Services["temporal"]
	main := intVariable(t, temporal, "temporal", "SQL_MAX_CONNS")
	vis := intVariable(t, temporal, "temporal", "SQL_VIS_MAX_CONNS")
	pool := func(name string) int {
		env := environment(p.Services[name])
		cfg, err := config.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return cfg.MySQLMaxOpenConns
	}
	starter, worker := pool("starter"), pool("worker")
	// `docker compose exec worker reconcile` opens a pool of the worker's size beside the workers.
	reconcile := worker
	total := temporalServices*(main+vis) + starter + plannedWorkers*worker + reconcile + adminConnections
	sum := fmt.Sprintf("%d Temporal services × (%d + %d) + starter %d + %d workers × %d + reconcile %d + admin %d = %d",
		temporalServices, main, vis, starter, plannedWorkers, worker, reconcile, adminConnections, total)
	return total, sum
}

// TestComposeMySQLConnectionsCoverThePools: max_connections is above what Temporal's services and the app's
// pools may open together, at the scale the README shows.
func TestComposeMySQLConnectionsCoverThePools(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	got := maxConnections(t, p.Services["mysql"])
	need, sum := connectionBudget(t, p)
	if got < need {
		t.Errorf("mysql: max_connections %d, below %s", got, sum)
	}
}

// TestOperationsSizingSaysHowMySQLIsSized: docs/operations.md's "## Sizing" shows the arithmetic and the
// max_connections the compose file sets.
func TestOperationsSizingSaysHowMySQLIsSized(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Sizing\n")
	if !ok {
		t.Fatal("docs/operations.md has no \"## Sizing\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	p := loadCompose(t)
	got := maxConnections(t, p.Services["mysql"])
	_, sum := connectionBudget(t, p)
	total := sum[strings.LastIndex(sum, "= ")+2:]
	for _, want := range []string{"max_connections", strconv.Itoa(got), total, "SQL_MAX_CONNS", "SQL_VIS_MAX_CONNS"} {
		if !strings.Contains(section, want) {
			t.Errorf("docs/operations.md, Sizing: does not mention %q (compose sets max_connections %d; %s)", want, got, sum)
		}
	}
}
