package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path; rules name packages relative to it ("" is the root package).
const module = "github.com/ordersaga/ordersaga"

// pkg is what the test needs of `go list -json` for one package.
type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string // non-test files
	TestImports  []string // _test.go files of the package itself
	XTestImports []string // _test.go files of package x_test
	Error        *struct{ Err string }
}

// rel is p's path relative to the module ("" for the root, "-" outside the module).
func rel(path string) string {
	if path == module {
		return ""
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return "-"
}

func inModule(path string) bool { return rel(path) != "-" }

// match reports whether path matches pattern: "..." matches everything, "x/..." matches x and everything under
// it, anything else matches itself.
func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// std reports whether path is in the standard library (no dot in its first element).
func std(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// Import groups the rules forbid.
var (
	redisLibs = []string{"github.com/redis/go-redis/...", "github.com/alicebob/miniredis/..."}
	gormLibs  = []string{"gorm.io/..."}
	sqlLibs   = []string{"database/sql/...", "github.com/go-sql-driver/mysql/...", "modernc.org/sqlite/...", "modernc.org/libc/...",
		"github.com/mattn/go-sqlite3/...", "github.com/lib/pq/...", "github.com/jackc/pgx/..."}
	storeLibs = concat(redisLibs, gormLibs, sqlLibs)
	temporal  = []string{"go.temporal.io/..."}
	// otelAPI is OpenTelemetry's API (spans), without its SDK or exporters: what a store may use to trace its I/O.
	otelAPI = []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/trace"}
)

func concat(groups ...[]string) []string { return slices.Concat(groups...) }

// A layer is a set of packages and what their non-test files may import. An import is checked in this order:
// forbid (fails), then a module package must be in module, a third-party package in thirdParty; the standard
// library is allowed unless forbidden.
type layer struct {
	name       string
	pkgs       func(p pkg) bool // the packages of the layer
	module     []string         // module packages it may import, relative ("" is the root); nil: none
	thirdParty []string         // third-party patterns it may import; nil: none, {"..."}: any not forbidden
	forbid     []string         // import patterns it must not import, standard library included
}

// Package selectors.
func paths(rels ...string) func(pkg) bool {
	return func(p pkg) bool { return inModule(p.ImportPath) && matchAny(rels, rel(p.ImportPath)) }
}

func isMain(p pkg) bool { return p.Name == "main" }

// loadTool reports whether path is in the flash-sale load tool's tree: the library, at internal/flashsale today
// and under flashsale/ once moved, and the flashsale command.
func loadTool(path string) bool {
	return inModule(path) && matchAny([]string{"internal/flashsale/...", "flashsale/..."}, rel(path))
}

func loadToolLib(p pkg) bool { return loadTool(p.ImportPath) && !isMain(p) }
func loadToolCmd(p pkg) bool { return loadTool(p.ImportPath) && isMain(p) }

// testHelper reports whether path is a package that only tests may import.
func testHelper(path string) bool {
	return inModule(path) && matchAny([]string{"internal/testenv/...", "internal/sagatest/...", "internal/refundsim/refundsimtest"}, rel(path))
}

// layers is the table of today's layering; every package of the module must be in at least one layer. Each
// package's doc.go says the same in words ("May import: ...").
var layers = []layer{
	{
		name:   "root domain package: standard library only, no I/O",
		pkgs:   paths(""),
		forbid: []string{"net/...", "database/sql/...", "os/...", "syscall", "testing"},
	},
	{
		name:       "workflows: deterministic saga code, no I/O libraries (effects go through activities)",
		pkgs:       paths("workflows/..."),
		module:     []string{"", "activities"},
		thirdParty: []string{"go.temporal.io/sdk/...", "go.temporal.io/api/..."},
		forbid: concat(storeLibs, []string{"net/...", "os/...", "syscall", "math/rand/...", "crypto/rand",
			"go.temporal.io/sdk/client", "go.temporal.io/sdk/activity"}),
	},
	{
		name:       "activities: thin adapters (decode, call a store or the engine, type the errors), no store library",
		pkgs:       paths("activities/..."),
		module:     []string{"", "internal/redisstock", "internal/sqlstore", "internal/reconcile", "internal/retention", "internal/killpoint", "internal/refundsend"},
		thirdParty: []string{"go.temporal.io/sdk/...", "go.temporal.io/api/..."},
		forbid: concat(storeLibs, []string{"go.temporal.io/sdk/workflow", "go.temporal.io/sdk/client",
			"go.temporal.io/sdk/worker", "go.temporal.io/server/..."}),
	},
	{
		name:       "internal/redisstock: the Redis stock store, its keys and scripts; go-redis (and the OpenTelemetry API for its spans) only",
		pkgs:       paths("internal/redisstock/..."),
		module:     []string{""},
		thirdParty: concat([]string{"github.com/redis/go-redis/..."}, otelAPI),
		forbid:     concat(gormLibs, sqlLibs, temporal, []string{"github.com/alicebob/miniredis/..."}),
	},
	{
		name:       "internal/admission: the order API's admission gate and key markers, on the stock store's Redis",
		pkgs:       paths("internal/admission/..."),
		module:     []string{"", "internal/redisstock"},
		thirdParty: []string{"github.com/redis/go-redis/..."},
		forbid:     concat(gormLibs, sqlLibs, temporal, []string{"github.com/alicebob/miniredis/..."}),
	},
	{
		name:       "internal/sqlstore: the SQL store (inventory, ledger, orders, payments, keys, anomalies); GORM and drivers (modernc.org/libc: the SQLite driver's C runtime, whose allocator sqlitemem.go tends; and the OpenTelemetry API for its spans) only",
		pkgs:       paths("internal/sqlstore/..."),
		module:     []string{"", "schema"},
		thirdParty: concat([]string{"gorm.io/...", "github.com/go-sql-driver/mysql/...", "modernc.org/sqlite/...", "modernc.org/libc/..."}, otelAPI),
		forbid:     concat(redisLibs, temporal),
	},
	{
		name:       "internal/reconcile: the reconciliation engine, the cold load and the Redis-down fallback, through the stores",
		pkgs:       paths("internal/reconcile/..."),
		module:     []string{"", "internal/redisstock", "internal/sqlstore"},
		thirdParty: []string{"go.temporal.io/sdk/activity", "github.com/prometheus/..."},
		forbid:     storeLibs,
	},
	{
		name:       "internal/retention: the idempotency records' cleanup, through the stores",
		pkgs:       paths("internal/retention/..."),
		module:     []string{"", "internal/redisstock", "internal/sqlstore"},
		thirdParty: []string{"github.com/prometheus/..."},
		forbid:     concat(storeLibs, temporal),
	},
	{
		name: "schema: migrations on database/sql, standard library only (callers register the driver)",
		pkgs: paths("schema/..."),
	},
	{
		name: "internal/api: the HTTP layer reaches the stores through their packages, never go-redis, GORM or SQL directly",
		pkgs: paths("internal/api/..."),
		module: []string{"", "workflows", "internal/orderclient", "internal/placement", "internal/webhook",
			"internal/sqlstore", "internal/redisstock", "internal/admission", "internal/reconcile"},
		thirdParty: []string{"..."},
		forbid: concat(storeLibs, []string{"go.temporal.io/sdk/workflow", "go.temporal.io/sdk/worker",
			"go.temporal.io/server/..."}),
	},
	{
		name:       "internal/apiprocess: the order API as a process runs it (settings from the configuration, listeners, drain)",
		pkgs:       paths("internal/apiprocess/..."),
		module:     []string{"internal/api", "internal/config"},
		thirdParty: []string{"go.opentelemetry.io/..."},
		forbid:     concat(storeLibs, temporal),
	},
	{
		name:       "internal/placement: the place-order service, plain Go (no HTTP); the stores through their packages",
		pkgs:       paths("internal/placement/..."),
		module:     []string{"", "workflows", "internal/orderclient", "internal/sqlstore", "internal/admission"},
		thirdParty: []string{"go.temporal.io/sdk/client", "go.temporal.io/api/...", "golang.org/x/sync/..."},
		forbid:     concat(storeLibs, []string{"net/http/..."}),
	},
	{
		name:       "internal/orderclient: the Temporal client side of OrderWorkflow",
		pkgs:       paths("internal/orderclient/..."),
		module:     []string{"", "workflows"},
		thirdParty: []string{"go.temporal.io/sdk/...", "go.temporal.io/api/..."},
		forbid:     concat(storeLibs, []string{"net/http/...", "go.temporal.io/sdk/workflow", "go.temporal.io/sdk/worker"}),
	},
	{
		name:   "internal/webhook: signatures, standard library only, no I/O",
		pkgs:   paths("internal/webhook/..."),
		forbid: []string{"net/...", "database/sql/...", "os/..."},
	},
	{
		name:   "internal/killpoint: the chaos tool's kill points, standard library only, no I/O beyond signalling its own process",
		pkgs:   paths("internal/killpoint/..."),
		forbid: []string{"net/...", "database/sql/..."},
	},
	{
		name:   "internal/gitrev: the commit a measurement ran on (git), standard library only",
		pkgs:   paths("internal/gitrev"),
		forbid: []string{"net/...", "database/sql/..."},
	},
	{
		name:   "internal/netport: the port picker, standard library only",
		pkgs:   paths("internal/netport/..."),
		forbid: []string{"database/sql/..."},
	},
	{
		name:   "internal/config: settings, standard library only",
		pkgs:   paths("internal/config/..."),
		forbid: []string{"net/http/...", "database/sql/..."},
	},
	{
		name:       "internal/platform: the process wiring (logger, Temporal, the stores, the reconciliation schedule and metrics)",
		pkgs:       paths("internal/platform/..."),
		module:     []string{"activities", "workflows", "internal/config", "internal/redisstock", "internal/sqlstore", "internal/reconcile", "internal/retention", "internal/refunds", "internal/refundsend"},
		thirdParty: []string{"..."},
		forbid:     concat(gormLibs, sqlLibs, []string{"go.temporal.io/server/..."}),
	},
	{
		name:   "internal/refunds: the refund provider's interface, HTTP adapter and wire contract, standard library otherwise",
		pkgs:   paths("internal/refunds/..."),
		module: []string{"internal/config", "internal/webhook"},
		forbid: concat(storeLibs, temporal),
	},
	{
		name:       "internal/refundsend: the refund outbox drained through a provider, through the SQL store's package",
		pkgs:       paths("internal/refundsend/..."),
		module:     []string{"internal/refunds", "internal/sqlstore", "internal/killpoint"},
		thirdParty: []string{"github.com/prometheus/..."},
		forbid:     concat(storeLibs, temporal),
	},
	{
		name:   "internal/refundsim: the refund provider simulator, the refund contract and the signature, standard library otherwise",
		pkgs:   paths("internal/refundsim"),
		module: []string{"internal/refunds", "internal/webhook"},
		forbid: concat(storeLibs, temporal),
	},
	{
		name: "internal/refundsim/refundsimtest: runs paysim serve in a child process, standard library only",
		pkgs: paths("internal/refundsim/refundsimtest"),
	},
	{
		name:   "internal/invariants: checks the stores through their packages, standard library otherwise",
		pkgs:   paths("internal/invariants/..."),
		module: []string{"", "internal/sqlstore", "internal/redisstock", "internal/invariants/orderledger"},
		forbid: []string{"database/sql/...", "net/..."},
	},
	{
		name:   "internal/invariants/orderledger: the rule of an order line's ledger, the root package and no I/O (the load tool imports it)",
		pkgs:   paths("internal/invariants/orderledger/..."),
		module: []string{""},
		forbid: []string{"database/sql/...", "net/...", "os/..."},
	},
	{
		name: "internal/faults: fault injectors (Toxiproxy, a redis-server of its own, MySQL kills and lock crossing), nothing of the module",
		pkgs: paths("internal/faults/..."),
		thirdParty: []string{"github.com/Shopify/toxiproxy/v2/...", "github.com/rs/zerolog/...",
			"github.com/redis/go-redis/..."},
		forbid: concat(gormLibs, temporal),
	},
	{
		name:       "internal/memredis: a go-redis client's connection to miniredis in memory, miniredis and the standard library only",
		pkgs:       paths("internal/memredis/..."),
		thirdParty: []string{"github.com/alicebob/miniredis/..."},
		forbid:     concat(gormLibs, sqlLibs, temporal),
	},
	{
		name:       "internal/devserver: in-process Temporal server and UI, nothing of the module but its port picker",
		pkgs:       paths("internal/devserver/..."),
		module:     []string{"internal/netport"},
		thirdParty: []string{"go.temporal.io/...", "github.com/temporalio/..."},
		forbid:     storeLibs,
	},
	{
		name:       "internal/redislab: a local Redis Cluster's processes (tests and bench), go-redis and its port picker only",
		pkgs:       paths("internal/redislab/..."),
		module:     []string{"internal/netport", "internal/config"},
		thirdParty: []string{"github.com/redis/go-redis/..."},
		forbid:     concat(gormLibs, sqlLibs, temporal, []string{"testing"}),
	},
	{
		name:       "internal/testenv: the tests' stores",
		pkgs:       paths("internal/testenv/..."),
		module:     []string{"internal/sqlstore", "internal/redisstock", "internal/netport", "internal/redislab", "internal/config"},
		thirdParty: []string{"..."},
		forbid:     temporal,
	},
	{
		name:       "internal/sagatest: the tests' Temporal server and worker",
		pkgs:       paths("internal/sagatest/..."),
		module:     []string{"activities", "workflows", "internal/orderclient", "internal/platform", "internal/testenv", "internal/sqlstore", "internal/redisstock"},
		thirdParty: []string{"..."},
	},
	{
		name:       "flash-sale load tool library: drives the stack from outside, over HTTP (and a read-only DB snapshot)",
		pkgs:       loadToolLib,
		module:     []string{"", "internal/webhook", "internal/invariants/orderledger", "internal/refundsim"},
		thirdParty: []string{"..."},
		forbid:     concat(redisLibs, gormLibs, temporal),
	},
	{
		name:   "test-only packages: their non-test files (doc.go) import nothing",
		pkgs:   paths("deploy", "internal/e2e", "internal/layers", "models"),
		forbid: []string{"..."},
	},
	{
		name:       "commands (package main): any library of the module (see the rules on importees)",
		pkgs:       isMain,
		module:     []string{"..."},
		thirdParty: []string{"..."},
		forbid:     []string{"testing"},
	},
	{
		name:       "flashsale command: a thin main around the load tool's library",
		pkgs:       loadToolCmd,
		module:     []string{"internal/flashsale/...", "flashsale/..."},
		thirdParty: []string{"golang.org/x/term"},
		forbid:     concat(storeLibs, temporal),
	},
	{
		name:       "paysim: plays the payment provider from outside (HTTP and the webhook signature)",
		pkgs:       paths("paysim"),
		module:     []string{"", "internal/api", "internal/webhook", "internal/refunds", "internal/refundsim"},
		thirdParty: []string{"..."},
		forbid:     concat(storeLibs, temporal),
	},
	{
		name:       "worker: runs workflows and activities, serves no order API",
		pkgs:       paths("worker"),
		module:     []string{"..."},
		thirdParty: []string{"..."},
		forbid:     []string{module + "/internal/api/..."},
	},
	{
		name:       "starter: the API process, reaches the stores through platform and their packages",
		pkgs:       paths("starter"),
		module:     []string{"..."},
		thirdParty: []string{"..."},
		forbid:     storeLibs,
	},
}

// exceptions are imports a layer forbids that exist today, each with the file that has it and why, as
// "<package relative to the module> -> <import>". None today: keep it that way. The test fails when an
// exception is no longer needed.
var exceptions = map[string]string{}

// violation is one import a rule forbids.
type violation struct {
	pkg, imp, rule string
}

func (v violation) String() string {
	return fmt.Sprintf("%s imports %s, breaking the rule %q", v.pkg, v.imp, v.rule)
}

func (v violation) key() string { return rel(v.pkg) + " -> " + v.imp }

// checkLayer returns the non-test imports of p that l forbids.
func checkLayer(l layer, p pkg) []violation {
	var out []violation
	for _, imp := range p.Imports {
		bad := ""
		switch {
		case matchAny(l.forbid, imp):
			bad = "forbidden"
		case inModule(imp):
			if !matchAny(l.module, rel(imp)) {
				bad = "module package not allowed"
			}
		case !std(imp):
			if !matchAny(l.thirdParty, imp) {
				bad = "third-party package not allowed"
			}
		}
		if bad != "" {
			out = append(out, violation{p.ImportPath, imp, l.name + " (" + bad + ")"})
		}
	}
	return out
}

// checkImportees applies the rules on who may import a package, over all packages at once.
func checkImportees(all []pkg) []violation {
	byPath := map[string]pkg{}
	for _, p := range all {
		byPath[p.ImportPath] = p
	}
	var out []violation
	for _, p := range all {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if q, ok := byPath[imp]; ok && isMain(q) && imp != p.ImportPath {
				out = append(out, violation{p.ImportPath, imp, "no package imports a main package"})
			}
		}
		for _, imp := range p.Imports {
			if testHelper(imp) && !testHelper(p.ImportPath) {
				out = append(out, violation{p.ImportPath, imp,
					"internal/testenv and internal/sagatest are imported from _test.go files only"})
			}
			if q, ok := byPath[imp]; ok && loadToolLib(q) && !loadTool(p.ImportPath) {
				out = append(out, violation{p.ImportPath, imp,
					"the load tool's library is imported by the flashsale command only"})
			}
		}
	}
	return out
}

// check returns all violations, the exceptions that excused one, and the packages in no layer.
func check(all []pkg) (vs []violation, used map[string]bool, uncovered []string) {
	used = map[string]bool{}
	var raw []violation
	for _, p := range all {
		covered := false
		for _, l := range layers {
			if l.pkgs(p) {
				covered = true
				raw = append(raw, checkLayer(l, p)...)
			}
		}
		if !covered {
			uncovered = append(uncovered, p.ImportPath)
		}
	}
	raw = append(raw, checkImportees(all)...)
	for _, v := range raw {
		if _, ok := exceptions[v.key()]; ok {
			used[v.key()] = true
			continue
		}
		vs = append(vs, v)
	}
	return vs, used, uncovered
}

// listPackages runs `go list` over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to list the imports: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e",
		"-json=ImportPath,Name,Dir,GoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var all []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		all = append(all, p)
	}
	if !slices.ContainsFunc(all, func(p pkg) bool { return p.ImportPath == module }) {
		t.Fatalf("go list did not list %s (listed %d packages)", module, len(all))
	}
	return all
}

// TestLayers fails when a package imports what its layer must not, when a package is in no layer, and when an
// exception is no longer needed.
func TestLayers(t *testing.T) {
	all := listPackages(t)
	vs, used, uncovered := check(all)
	for _, v := range vs {
		t.Error(v)
	}
	for _, p := range uncovered {
		t.Errorf("%s is in no layer: add it to the table in internal/layers/layers_test.go and give it a doc.go "+
			"that says what it may import", p)
	}
	for k, why := range exceptions {
		if !used[k] {
			t.Errorf("exception %q (%s) is no longer needed: remove it", k, why)
		}
	}
	t.Logf("checked %d packages against %d layers", len(all), len(layers))
}

// TestRulesCatchViolations runs the rules on synthetic packages: each must break exactly the rules listed, so
// the layer check cannot pass vacuously.
func TestRulesCatchViolations(t *testing.T) {
	m := func(r string) string {
		if r == "" {
			return module
		}
		return module + "/" + r
	}
	base := []pkg{
		{ImportPath: m(""), Name: "ordersaga", Imports: []string{"time"}},
		{ImportPath: m("activities"), Name: "activities", Imports: []string{m(""), m("internal/redisstock"), m("internal/sqlstore"), "go.temporal.io/sdk/activity"}},
		{ImportPath: m("internal/redisstock"), Name: "redisstock", Imports: []string{m(""), "github.com/redis/go-redis/v9"}},
		{ImportPath: m("internal/sqlstore"), Name: "sqlstore", Imports: []string{m(""), m("schema"), "gorm.io/gorm"}},
		{ImportPath: m("workflows"), Name: "workflows", Imports: []string{m(""), m("activities"), "go.temporal.io/sdk/workflow"}},
		{ImportPath: m("internal/testenv"), Name: "testenv", Imports: []string{m("internal/sqlstore"), m("internal/redisstock"), "testing"}},
		{ImportPath: m("internal/flashsale"), Name: "flashsale", Imports: []string{m(""), "net/http", "database/sql"}},
		{ImportPath: m("flashsale"), Name: "main", Imports: []string{m("internal/flashsale"), "golang.org/x/term"}},
		{ImportPath: m("worker"), Name: "main", Imports: []string{m("activities"), m("workflows")}},
	}
	cases := []struct {
		name string
		pkgs []pkg
		want []string // "<package relative> -> <import>" of each violation, in order
	}{
		{"today's shape passes", nil, nil},
		{"activities imports go-redis and GORM, a store imports the other's library", []pkg{
			{ImportPath: m("activities"), Name: "activities", Imports: []string{m(""), "github.com/redis/go-redis/v9", "gorm.io/gorm"}},
			{ImportPath: m("internal/sqlstore"), Name: "sqlstore", Imports: []string{"gorm.io/gorm", "github.com/redis/go-redis/v9"}},
		}, []string{"activities -> github.com/redis/go-redis/v9", "activities -> gorm.io/gorm", "internal/sqlstore -> github.com/redis/go-redis/v9"}},
		{"workflows imports go-redis", []pkg{
			{ImportPath: m("workflows"), Name: "workflows", Imports: []string{m(""), "github.com/redis/go-redis/v9"}},
		}, []string{"workflows -> github.com/redis/go-redis/v9"}},
		{"workflows imports database/sql, net/http and math/rand", []pkg{
			{ImportPath: m("workflows/sub"), Name: "sub", Imports: []string{"database/sql", "net/http", "math/rand/v2"}},
		}, []string{"workflows/sub -> database/sql", "workflows/sub -> net/http", "workflows/sub -> math/rand/v2"}},
		{"api imports gorm and go-redis", []pkg{
			{ImportPath: m("internal/api"), Name: "api", Imports: []string{m("internal/sqlstore"), "gorm.io/gorm", "github.com/redis/go-redis/v9", "net/http"}},
		}, []string{"internal/api -> gorm.io/gorm", "internal/api -> github.com/redis/go-redis/v9"}},
		{"placement speaks HTTP and imports the API", []pkg{
			{ImportPath: m("internal/placement"), Name: "placement", Imports: []string{m("internal/sqlstore"), m("internal/api"), "net/http"}},
		}, []string{"internal/placement -> " + m("internal/api"), "internal/placement -> net/http"}},
		{"api imports platform", []pkg{
			{ImportPath: m("internal/api"), Name: "api", Imports: []string{m("internal/platform")}},
		}, []string{"internal/api -> " + m("internal/platform")}},
		{"root imports the module and a third party", []pkg{
			{ImportPath: m(""), Name: "ordersaga", Imports: []string{m("activities"), "github.com/google/uuid", "os"}},
		}, []string{" -> " + m("activities"), " -> github.com/google/uuid", " -> os"}},
		{"a library imports a main package", []pkg{
			{ImportPath: m("internal/config"), Name: "config", Imports: []string{m("worker")}},
		}, []string{"internal/config -> " + m("worker"), "internal/config -> " + m("worker")}},
		{"non-test code imports testenv; a test may", []pkg{
			{ImportPath: m("internal/reconcile"), Name: "reconcile", Imports: []string{m("internal/testenv")},
				XTestImports: []string{m("internal/testenv"), m("internal/sagatest")}},
		}, []string{"internal/reconcile -> " + m("internal/testenv"), "internal/reconcile -> " + m("internal/testenv")}},
		{"the load tool's library moved under flashsale/ and imported elsewhere", []pkg{
			{ImportPath: m("flashsale/internal/loadtest"), Name: "loadtest", Imports: []string{m(""), m("activities")}},
			{ImportPath: m("bench"), Name: "main", Imports: []string{m("flashsale/internal/loadtest")}},
		}, []string{"flashsale/internal/loadtest -> " + m("activities"), "bench -> " + m("flashsale/internal/loadtest")}},
		{"redislab imports a store and testing", []pkg{
			{ImportPath: m("internal/redislab"), Name: "redislab", Imports: []string{m("internal/netport"), m("internal/redisstock"), "github.com/redis/go-redis/v9", "testing"}},
		}, []string{"internal/redislab -> " + m("internal/redisstock"), "internal/redislab -> testing"}},
		{"a package in no layer", []pkg{
			{ImportPath: m("internal/newthing"), Name: "newthing"},
		}, []string{"uncovered internal/newthing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := slices.Clone(base)
			for _, p := range c.pkgs {
				if i := slices.IndexFunc(all, func(q pkg) bool { return q.ImportPath == p.ImportPath }); i >= 0 {
					all[i] = p
				} else {
					all = append(all, p)
				}
			}
			vs, _, uncovered := check(all)
			var got []string
			for _, v := range vs {
				got = append(got, v.key())
			}
			for _, p := range uncovered {
				got = append(got, "uncovered "+rel(p))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %q\nwant %q\n%v", got, c.want, vs)
			}
		})
	}
}

// TestMatch pins the pattern syntax of the rules.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"net/...", "net", true},
		{"net/...", "net/http", true},
		{"net/...", "netip", false},
		{"gorm.io/...", "gorm.io/driver/mysql", true},
		{"database/sql/...", "database/sql/driver", true},
		{"...", "anything/at/all", true},
		{"os", "os/exec", false},
		{"internal/flashsale/...", "internal/flashsale", true},
		{"flashsale/...", "flashsale/internal/loadtest", true},
		{"flashsale/...", "flashsalex", false},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
