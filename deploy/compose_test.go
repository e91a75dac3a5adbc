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

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/go-sql-driver/mysql"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/dynamicconfig"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/workflows"
)

// The services built from this repository: whether each serves the API, and the directory of its main.
var appServices = map[string]struct {
	api  bool
	main string
}{
	"worker":  {api: false, main: "worker"},
	"starter": {api: true, main: "starter"},
}

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		// What `docker compose up` is told in the README; the file refuses to load without them.
		Environment: types.Mapping{"PAYMENT_WEBHOOK_SECRET": "s3cret", "ADMIN_TOKEN": "t0ken"},
	}, func(o *loader.Options) { o.SetProjectName("ordersaga", true) })
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}

func TestComposeRefusesToStartWithoutSecrets(t *testing.T) {
	t.Parallel()
	root, _ := filepath.Abs("..")
	_, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("ordersaga", true) })
	if err == nil || !strings.Contains(err.Error(), "PAYMENT_WEBHOOK_SECRET") {
		t.Fatalf("loading without PAYMENT_WEBHOOK_SECRET: got %v, want an error naming it", err)
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
	p := loadCompose(t)
	for name, svc := range p.Services {
		switch {
		case svc.Build != nil:
			if _, ok := appServices[name]; !ok {
				t.Errorf("%s: built from this repository but not one of the app services %v", name, appServices)
			}
		case svc.Image == "":
			t.Errorf("%s: neither an image nor a build", name)
		case !pinned(svc.Image):
			t.Errorf("%s: image %q is not pinned to a version", name, svc.Image)
		}
	}
	for name := range appServices {
		if svc, ok := p.Services[name]; !ok || svc.Build == nil {
			t.Errorf("%s: missing, or not built from the Dockerfile", name)
		}
	}
}

func TestComposeDependenciesWaitForHealthOrCompletion(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
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

// configVariables are the environment variables the worker and the starter read: what config.FromEnv asks
// for (every setting is read there).
func configVariables(t *testing.T) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	record := func(name string) string { read[name] = true; return "" }
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
	p := loadCompose(t)
	for name, role := range appServices {
		known := configVariables(t)
		for k := range mainVariables(t, filepath.Join("..", role.main)) {
			known[k] = true
		}
		svc := p.Services[name]
		env := environment(svc)
		for k := range env {
			if !known[k] {
				t.Errorf("%s: %s is set but neither internal/config nor %s/ reads it (misspelt, or dead)", name, k, role.main)
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
	host("REDIS_ADDR", cfg.RedisAddr)
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

func TestTemporalSetupRegistersTheOrderSearchAttributes(t *testing.T) {
	t.Parallel()
	types := map[string]enumspb.IndexedValueType{
		"Keyword": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "KeywordList": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		"Datetime": enumspb.INDEXED_VALUE_TYPE_DATETIME, "Int": enumspb.INDEXED_VALUE_TYPE_INT,
		"Double": enumspb.INDEXED_VALUE_TYPE_DOUBLE, "Bool": enumspb.INDEXED_VALUE_TYPE_BOOL,
		"Text": enumspb.INDEXED_VALUE_TYPE_TEXT,
	}
	f, err := os.Open(filepath.Join("temporal", "setup-namespace.sh"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]enumspb.IndexedValueType{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "add_search_attribute" {
			typ, ok := types[fields[2]]
			if !ok {
				t.Errorf("setup-namespace.sh: unknown search attribute type %q", fields[2])
			}
			got[fields[1]] = typ
		}
	}
	want := workflows.SearchAttributes()
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("search attribute %s: setup-namespace.sh registers %v, workflows.SearchAttributes wants %v", name, got[name], typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("setup-namespace.sh registers %s, which workflows.SearchAttributes does not have", name)
		}
	}
}

func TestTemporalDynamicConfigIsKnownToTheServer(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("temporal", "dynamicconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lr := dynamicconfig.LoadYamlFile(b)
	for _, e := range append(lr.Errors, lr.Warnings...) {
		t.Errorf("deploy/temporal/dynamicconfig.yaml: %v", e)
	}
	if len(lr.Map) == 0 {
		t.Error("deploy/temporal/dynamicconfig.yaml sets nothing")
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
