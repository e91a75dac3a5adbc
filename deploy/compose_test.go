package deploy_test

import (
	"bufio"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/go-sql-driver/mysql"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
)

// The services built from this repository: whether each serves the API, and the directory of its main.
var appServices = map[string]struct {
	api  bool
	main string
}{
	"worker":  {api: false, main: "worker"},
	"starter": {api: true, main: "starter"},
}

// envExample is .env.example's variables: what `cp .env.example .env` gives docker compose. Its values are
// placeholders, distinct from each other, so a test can tell a value that came from .env from one written
// in docker-compose.yml.
func envExample(t *testing.T) types.Mapping {
	t.Helper()
	f, err := os.Open(filepath.Join("..", ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := types.Mapping{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || v == "" {
			t.Fatalf(".env.example: %q is not VAR=value", line)
		}
		m[k] = v
	}
	if len(m) == 0 {
		t.Fatal(".env.example sets nothing")
	}
	return m
}

// loadComposeWith loads docker-compose.yml and the files laid over it (docker compose -f … -f …).
func loadComposeWith(env types.Mapping, over ...string) (*types.Project, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	files := []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}}
	for _, f := range over {
		files = append(files, types.ConfigFile{Filename: filepath.Join(root, f)})
	}
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: files,
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("ordersaga", true) })
}

// composeSetups are the stacks the files make: docker-compose.yml alone, and with docker-compose.cluster.yml
// over it (the Redis Cluster). The checks every service must pass run on each.
func composeSetups(t *testing.T) map[string]*types.Project {
	t.Helper()
	cluster, err := loadComposeWith(envExample(t), "docker-compose.cluster.yml")
	if err != nil {
		t.Fatalf("load docker-compose.yml with docker-compose.cluster.yml: %v", err)
	}
	return map[string]*types.Project{"docker-compose.yml": loadCompose(t), "with docker-compose.cluster.yml": cluster}
}

// loadCompose loads the file as `docker compose up` does after `cp .env.example .env` (the README's steps).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	p, err := loadComposeWith(envExample(t))
	if err != nil {
		t.Fatalf("load docker-compose.yml with .env.example: %v", err)
	}
	return p
}

// TestComposeRefusesToStartWithoutSecrets: each variable of .env.example is required; without it the file
// does not load, and the error names it.
func TestComposeRefusesToStartWithoutSecrets(t *testing.T) {
	t.Parallel()
	full := envExample(t)
	for name := range full {
		env := types.Mapping{}
		for k, v := range full {
			if k != name {
				env[k] = v
			}
		}
		if _, err := loadComposeWith(env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("loading without %s: got %v, want an error naming it", name, err)
		}
	}
}

// secretName matches the variables that hold a password, secret, token or key.
var secretName = regexp.MustCompile(`PASSWORD|PWD|SECRET|TOKEN|API_KEY`)

// TestComposeHasNoLiteralSecrets: every password, secret and token comes from .env, none is written in
// docker-compose.yml (nor in a DSN or a health check).
func TestComposeHasNoLiteralSecrets(t *testing.T) {
	t.Parallel()
	fromEnv := map[string]bool{}
	for _, v := range envExample(t) {
		fromEnv[v] = true
	}
	p := loadCompose(t)
	for name, svc := range p.Services {
		for k, v := range environment(svc) {
			if secretName.MatchString(k) && !fromEnv[v] {
				t.Errorf("%s: %s=%q is written in docker-compose.yml; take it from .env (${VAR:?message})", name, k, v)
			}
			if k == "MYSQL_DSN" {
				if dsn, err := mysql.ParseDSN(v); err != nil || !fromEnv[dsn.Passwd] {
					t.Errorf("%s: MYSQL_DSN's password is not from .env (%v)", name, err)
				}
			}
		}
		if hc := svc.HealthCheck; hc != nil {
			for _, arg := range hc.Test {
				if regexp.MustCompile(`(^|\s)-p\S`).MatchString(arg) {
					t.Errorf("%s: the health check passes a password on its command line: %q", name, arg)
				}
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`^\s*([A-Z_]*(?:PASSWORD|PWD|SECRET|TOKEN|API_KEY)[A-Z_]*)\s*:\s*([^\s$].*)$`)
	for i, line := range strings.Split(string(raw), "\n") {
		if m := literal.FindStringSubmatch(line); m != nil {
			t.Errorf("docker-compose.yml:%d: %s is a literal (%s)", i+1, m[1], m[2])
		}
	}
}

// TestComposePublishesOnLoopbackOnly: by default every published port is on 127.0.0.1: the Temporal
// frontend and UI (no TLS, no login here), MySQL and the API (API_BIND_IP publishes it beyond).
func TestComposePublishesOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %d published on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
	}
	for name, port := range map[string]uint32{"temporal": 7233, "temporal-ui": 8080, "mysql": 3306, "starter": 8080} {
		if !slices.ContainsFunc(p.Services[name].Ports, func(pc types.ServicePortConfig) bool { return pc.Target == port }) {
			t.Errorf("%s: port %d is not published (the README points at it)", name, port)
		}
	}
}

// TestComposeMetricsStayInside: the starter's admin listener (/metrics, the detailed /readyz) and the
// worker's metrics are set and not published.
func TestComposeMetricsStayInside(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	for name, variable := range map[string]string{"starter": "ADMIN_ADDR", "worker": "METRICS_ADDR"} {
		svc := p.Services[name]
		addr := environment(svc)[variable]
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s=%q: %v", name, variable, addr, err)
			continue
		}
		for _, pc := range svc.Ports {
			if strconv.FormatUint(uint64(pc.Target), 10) == port {
				t.Errorf("%s: %s port %s is published", name, variable, port)
			}
		}
	}
}

// TestComposeStopGracePeriodsCoverTheDrains: docker sends SIGKILL after stop_grace_period; the starter drains
// requests in flight for api.DefaultPlaceTimeout + 5 s (starter/main.go), the worker its activities for
// WorkerStopTimeout.
func TestComposeStopGracePeriodsCoverTheDrains(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for name, drain := range map[string]time.Duration{
		"starter": api.DefaultPlaceTimeout + 5*time.Second,
		"worker":  platform.WorkerOptions(cfg).WorkerStopTimeout,
	} {
		grace := p.Services[name].StopGracePeriod
		if grace == nil || time.Duration(*grace) <= drain {
			t.Errorf("%s: stop_grace_period %v, want more than its drain of %s", name, grace, drain)
		}
	}
}

// pinned reports whether an image reference names a fixed version: a digest, or a tag that is not "latest"
// and carries a version number.
func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return false
	}
	tag := image[i+1:]
	return tag != "latest" && regexp.MustCompile(`\d`).MatchString(tag)
}

func TestComposeServicesArePinnedOrBuilt(t *testing.T) {
	t.Parallel()
	for setup, p := range composeSetups(t) {
		t.Run(setup, func(t *testing.T) { checkPinnedOrBuilt(t, p) })
	}
}

func checkPinnedOrBuilt(t *testing.T, p *types.Project) {
	for name, svc := range p.Services {
		_, app := appServices[name]
		switch {
		case svc.Build != nil || builderOf(p, svc.Image) != "":
			if !app {
				t.Errorf("%s: runs an image built from this repository but is not one of the app services %v", name, appServices)
			}
		case svc.Image == "":
			t.Errorf("%s: neither an image nor a build", name)
		case !pinned(svc.Image):
			t.Errorf("%s: image %q is not pinned to a version", name, svc.Image)
		}
	}
	for name := range appServices {
		if svc, ok := p.Services[name]; !ok || (svc.Build == nil && builderOf(p, svc.Image) == "") {
			t.Errorf("%s: missing, or not running the image built from the Dockerfile", name)
		}
	}
}

func TestComposeDependenciesWaitForHealthOrCompletion(t *testing.T) {
	t.Parallel()
	for setup, p := range composeSetups(t) {
		t.Run(setup, func(t *testing.T) { checkDependencies(t, p) })
	}
}

func checkDependencies(t *testing.T, p *types.Project) {
	for name, svc := range p.Services {
		for dep, cond := range svc.DependsOn {
			target, ok := p.Services[dep]
			if !ok {
				t.Errorf("%s depends on %s, which does not exist", name, dep)
				continue
			}
			switch cond.Condition {
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable || len(target.HealthCheck.Test) == 0 {
					t.Errorf("%s waits for %s to be healthy, but %s has no health check", name, dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if target.Restart == types.RestartPolicyAlways || target.Restart == types.RestartPolicyUnlessStopped {
					t.Errorf("%s waits for %s to complete, but %s restarts forever (restart: %s)", name, dep, dep, target.Restart)
				}
			default:
				t.Errorf("%s depends on %s with condition %q: want service_healthy or service_completed_successfully, so `up` comes up in order",
					name, dep, cond.Condition)
			}
		}
	}
	for name := range appServices {
		for _, dep := range []string{"mysql", "redis"} {
			if _, ok := p.Services[name].DependsOn[dep]; !ok {
				t.Errorf("%s does not wait for %s", name, dep)
			}
		}
	}
}

func TestComposePublishedPortsDoNotClash(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	owner := map[string]string{}
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			if port.Published == "" {
				continue
			}
			key := port.HostIP + ":" + port.Published + "/" + port.Protocol
			if other, ok := owner[key]; ok {
				t.Errorf("host port %s published by both %s and %s", key, other, name)
			}
			owner[key] = name
		}
	}
}

// configVariables are the environment variables process (config.Worker or config.Starter) reads: those of
// config.FromEnv that internal/config says the process uses.
func configVariables(t *testing.T, process string) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	record := func(name string) string {
		if config.ReadBy(process, name) {
			read[name] = true
		}
		return ""
	}
	if _, err := config.FromEnv(record); err != nil {
		t.Fatalf("config.FromEnv with an empty environment: %v", err)
	}
	return read
}

func environment(svc types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range svc.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// mainVariables are the variables a command's own files read with getenv("…") or os.Getenv("…"), beside
// its configuration packages.
func mainVariables(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if (name == "getenv" || name == "Getenv") && ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					read[v] = true
				}
			}
			return true
		})
	}
	return read
}

func TestComposeAppEnvironmentMatchesConfig(t *testing.T) {
	t.Parallel()
	for setup, p := range composeSetups(t) {
		t.Run(setup, func(t *testing.T) { checkAppEnvironment(t, p) })
	}
}

func checkAppEnvironment(t *testing.T, p *types.Project) {
	for name, role := range appServices {
		known := configVariables(t, name)
		for k := range mainVariables(t, filepath.Join("..", role.main)) {
			known[k] = true
		}
		svc := p.Services[name]
		env := environment(svc)
		for k := range env {
			if !known[k] {
				t.Errorf("%s: %s is set but the %s does not use it (internal/config/variables.go says who does; misspelt, or dead)", name, k, name)
			}
		}
		cfg, err := config.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Errorf("%s: config.FromEnv: %v", name, err)
			continue
		}
		if err := cfg.RequireStores(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if role.api {
			if err := cfg.RequireAPISecrets(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		checkAddresses(t, p, name, cfg)
		if role.api {
			checkHTTP(t, svc, name, cfg)
		}
	}
}

// checkAddresses checks that the app dials services of this file, with the credentials they were given.
func checkAddresses(t *testing.T, p *types.Project, name string, cfg config.Config) {
	t.Helper()
	host := func(what, addr string) string {
		h, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s=%q: %v", name, what, addr, err)
			return ""
		}
		if _, ok := p.Services[h]; !ok {
			t.Errorf("%s: %s=%q names no service of docker-compose.yml", name, what, addr)
		}
		return h
	}
	host("TEMPORAL_ADDRESS", cfg.TemporalAddress)
	form, addrs := cfg.RedisForm()
	for _, a := range addrs {
		host(form.String(), a)
	}
	dsn, err := mysql.ParseDSN(cfg.MySQLDSN)
	if err != nil {
		t.Errorf("%s: MYSQL_DSN: %v", name, err)
		return
	}
	if h := host("MYSQL_DSN", dsn.Addr); h != "" {
		db := environment(p.Services[h])
		if dsn.DBName != db["MYSQL_DATABASE"] || dsn.User != db["MYSQL_USER"] || dsn.Passwd != db["MYSQL_PASSWORD"] {
			t.Errorf("%s: MYSQL_DSN user/password/database %s/%s/%s are not the ones %s creates (%s/%s/%s)", name,
				dsn.User, dsn.Passwd, dsn.DBName, h, db["MYSQL_USER"], db["MYSQL_PASSWORD"], db["MYSQL_DATABASE"])
		}
	}
}

// checkHTTP checks that the API listens on every interface of its container, on the port that is published
// and health-checked.
func checkHTTP(t *testing.T, svc types.ServiceConfig, name string, cfg config.Config) {
	t.Helper()
	h, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		t.Errorf("%s: HTTP_ADDR: %v", name, err)
		return
	}
	if h != "0.0.0.0" && h != "" {
		t.Errorf("%s: HTTP_ADDR=%s listens on %s only: unreachable from outside the container", name, cfg.HTTPAddr, h)
	}
	published := slices.ContainsFunc(svc.Ports, func(p types.ServicePortConfig) bool { return port == strconv.FormatUint(uint64(p.Target), 10) })
	if !published {
		t.Errorf("%s: HTTP_ADDR port %s is not a published container port (%v)", name, port, svc.Ports)
	}
	if svc.HealthCheck == nil || !strings.Contains(strings.Join(svc.HealthCheck.Test, " "), ":"+port+"/readyz") {
		t.Errorf("%s: the health check does not ask /readyz on port %s", name, port)
	}
}

// TestComposeInfrastructureFindsItsPeers checks the addresses the third-party services are given.
func TestComposeInfrastructureFindsItsPeers(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	for name, svc := range p.Services {
		env := environment(svc)
		if addr, ok := env["TEMPORAL_ADDRESS"]; ok {
			if h, _, err := net.SplitHostPort(addr); err != nil || h != "temporal" {
				t.Errorf("%s: TEMPORAL_ADDRESS=%q: want the temporal service", name, addr)
			}
		}
		if seeds, ok := env["MYSQL_SEEDS"]; ok && seeds != "mysql" {
			t.Errorf("%s: MYSQL_SEEDS=%q: want the mysql service", name, seeds)
		}
	}
}

func TestComposeRedisNeverEvictsAndKeepsAnAOF(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	cmd := strings.Join(p.Services["redis"].Command, " ")
	for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command %q lacks %q", cmd, want)
		}
	}
	if img := p.Services["redis"].Image; !strings.HasPrefix(img, "redis:7.") {
		t.Errorf("redis image %s: want Redis 7", img)
	}
	if img := p.Services["mysql"].Image; !strings.HasPrefix(img, "mysql:8.") {
		t.Errorf("mysql image %s: want MySQL 8", img)
	}
}

func TestDockerfileBuildsPinnedImagesFromPackagesThatExist(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && strings.EqualFold(fields[0], "FROM") && !pinned(fields[1]) {
			t.Errorf("Dockerfile: %s: base image not pinned", line)
		}
		if i := strings.Index(line, "go build"); i >= 0 {
			for _, f := range strings.Fields(line[i:]) {
				if strings.HasPrefix(f, "./") {
					built = append(built, f)
				}
			}
		}
	}
	p := loadCompose(t)
	for name := range appServices {
		cmd := p.Services[name].Command
		if len(cmd) == 0 || !slices.Contains(built, "./"+cmd[0]) {
			t.Errorf("%s runs %v, which the Dockerfile does not build (it builds %v)", name, cmd, built)
		}
	}
	for _, pkg := range built {
		if _, err := os.Stat(filepath.Join("..", pkg, "main.go")); err != nil {
			t.Errorf("Dockerfile builds %s: %v", pkg, err)
		}
	}
}

// TestConfigurationProcessColumnMatchesConfig: the configuration table (docs/configuration.md, which the README
// links to) says, for each variable, the process that reads it (starter, worker or both), as
// internal/config/variables.go does: that is where an operator sets it.
func TestConfigurationProcessColumnMatchesConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		process := strings.TrimSpace(cells[2])
		var want []string
		switch process {
		case "starter":
			want = []string{config.Starter}
		case "worker":
			want = []string{config.Worker}
		case "both":
			want = []string{config.Worker, config.Starter}
		default:
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			seen++
			got := config.Readers(m[1])
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("docs/configuration.md: %s is read by %q, internal/config says %v", m[1], process, got)
			}
		}
	}
	if seen < len(config.Variables()) {
		t.Errorf("docs/configuration.md names the process of %d variables, internal/config reads %d", seen, len(config.Variables()))
	}
}
