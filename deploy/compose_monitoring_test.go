package deploy_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

// monitoringMounts are the directories of this repository Prometheus and Grafana read, where they read them.
var monitoringMounts = []struct{ service, source, target string }{
	{"prometheus", "deploy/prometheus", "/etc/prometheus"},
	{"grafana", "deploy/grafana/provisioning", "/etc/grafana/provisioning"},
	{"grafana", "deploy/grafana/dashboards", "/var/lib/grafana/dashboards"},
}

// bindMount returns the host path service mounts at target, "" when none.
func bindMount(svc types.ServiceConfig, target string) string {
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	return ""
}

// TestComposeMountsMonitoringFromTheRepository: Prometheus reads its scrape config and rules, Grafana its
// provisioning and dashboards, from this repository's directories.
func TestComposeMountsMonitoringFromTheRepository(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range monitoringMounts {
		svc, ok := p.Services[m.service]
		if !ok {
			t.Errorf("no %s service", m.service)
			continue
		}
		if got, want := bindMount(svc, m.target), filepath.Join(root, m.source); got != want {
			t.Errorf("%s: %s is mounted from %q, want ./%s", m.service, m.target, got, m.source)
		}
	}
}

// TestComposeBindMountsExist: every file or directory the file mounts is in the repository (a missing
// one would be mounted as an empty directory that Docker creates, and the service would start without it).
func TestComposeBindMountsExist(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for name, svc := range p.Services {
		for _, v := range svc.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			rel, err := filepath.Rel(root, v.Source)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: mounts %s, outside the repository", name, v.Source)
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s: mounts ./%s at %s: %v", name, rel, v.Target, err)
			}
		}
	}
}

// TestComposeGrafanaOpensToViewersOnly: anyone who reaches Grafana's loopback port may look, not edit; the
// admin's password comes from .env (TestComposeHasNoLiteralSecrets checks where from).
func TestComposeGrafanaOpensToViewersOnly(t *testing.T) {
	t.Parallel()
	env := environment(loadCompose(t).Services["grafana"])
	if env["GF_AUTH_ANONYMOUS_ENABLED"] != "true" || env["GF_AUTH_ANONYMOUS_ORG_ROLE"] != "Viewer" {
		t.Errorf("grafana: anonymous access %q as %q, want true as Viewer", env["GF_AUTH_ANONYMOUS_ENABLED"], env["GF_AUTH_ANONYMOUS_ORG_ROLE"])
	}
	if env["GF_SECURITY_ADMIN_PASSWORD"] == "" {
		t.Error("grafana: GF_SECURITY_ADMIN_PASSWORD is not set: the admin would keep Grafana's default password")
	}
}

// listenVariables name the address a process of the file listens on: the app's (internal/config) and the
// Temporal server's metrics endpoint.
var listenVariables = []string{"HTTP_ADDR", "ADMIN_ADDR", "METRICS_ADDR", "PROMETHEUS_ENDPOINT"}

// listenPorts are the ports a service serves on inside the compose network: its published and exposed
// container ports and its listen addresses (those must listen on every interface to be scraped).
func listenPorts(t *testing.T, name string, svc types.ServiceConfig) map[string]bool {
	t.Helper()
	ports := map[string]bool{}
	for _, pc := range svc.Ports {
		ports[strconv.FormatUint(uint64(pc.Target), 10)] = true
	}
	for _, e := range svc.Expose {
		ports[e] = true
	}
	env := environment(svc)
	for _, v := range listenVariables {
		addr, ok := env[v]
		if !ok {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s=%q: %v", name, v, addr, err)
			continue
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			ports[port] = true
		}
	}
	return ports
}

type prometheusConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
		DNSSDConfigs []struct {
			Names []string `yaml:"names"`
			Type  string   `yaml:"type"`
			Port  int      `yaml:"port"`
		} `yaml:"dns_sd_configs"`
	} `yaml:"scrape_configs"`
}

// readPrometheusConfig reads deploy/prometheus/prometheus.yml.
func readPrometheusConfig(t *testing.T) prometheusConfig {
	t.Helper()
	var c prometheusConfig
	if !readYAML(t, filepath.Join("prometheus", "prometheus.yml"), &c) {
		t.FailNow()
	}
	return c
}

// readYAML decodes the YAML file path into v; false (the test marked failed) when it does not parse. A file
// that cannot be read ends the test.
func readYAML(t *testing.T, path string, v any) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Errorf("%s: %v", path, err)
		return false
	}
	return true
}

// TestPrometheusScrapesComposeServices: each scrape target is a service of the file (or Prometheus itself)
// on a port that service serves, the app's metrics listeners are all scraped, and the worker, which scales
// out, is found by DNS (every replica) rather than by one static address (one replica at a time).
func TestPrometheusScrapesComposeServices(t *testing.T) {
	t.Parallel()
	checkScrapeTargets(t, readPrometheusConfig(t), loadCompose(t))
}

func checkScrapeTargets(t *testing.T, c prometheusConfig, p *types.Project) {
	t.Helper()
	scraped := map[string]bool{} // "service:port"
	staticWorker := false
	check := func(job, host, port string) {
		if host == "localhost" || host == "127.0.0.1" {
			host = "prometheus"
		}
		svc, ok := p.Services[host]
		if !ok {
			t.Errorf("prometheus.yml, job %s: target %s:%s names no service of docker-compose.yml", job, host, port)
			return
		}
		if !listenPorts(t, host, svc)[port] {
			t.Errorf("prometheus.yml, job %s: port %s is not one %s serves (its ports and listen addresses: %v)", job, port, host, listenPorts(t, host, svc))
		}
		scraped[host+":"+port] = true
	}
	if len(c.ScrapeConfigs) == 0 {
		t.Fatal("prometheus.yml scrapes nothing")
	}
	for _, sc := range c.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				if err != nil {
					t.Errorf("prometheus.yml, job %s: target %q: %v", sc.JobName, target, err)
					continue
				}
				staticWorker = staticWorker || host == "worker"
				check(sc.JobName, host, port)
			}
		}
		for _, dns := range sc.DNSSDConfigs {
			if dns.Type != "" && dns.Type != "A" && dns.Type != "AAAA" {
				t.Errorf("prometheus.yml, job %s: dns_sd_configs type %s: Docker's DNS answers A records of the service name", sc.JobName, dns.Type)
			}
			for _, n := range dns.Names {
				check(sc.JobName, strings.TrimPrefix(n, "tasks."), strconv.Itoa(dns.Port))
			}
		}
	}
	if staticWorker {
		t.Error("prometheus.yml: the worker is a static target: with `--scale worker=3` that scrapes one replica at a time; find it with dns_sd_configs")
	}
	for name, variable := range map[string]string{"starter": "ADMIN_ADDR", "worker": "METRICS_ADDR"} {
		_, port, _ := net.SplitHostPort(environment(p.Services[name])[variable])
		if !scraped[name+":"+port] {
			t.Errorf("prometheus.yml: %s's %s (port %s) is not scraped", name, variable, port)
		}
	}
}

// TestPrometheusRuleFilesAreInTheMount: each rule_files pattern, read inside the container, names files of
// deploy/prometheus (mounted at /etc/prometheus), and every file it matches is a rules file: a pattern that
// also matched prometheus.yml or a promtool test file would stop Prometheus loading its rules.
func TestPrometheusRuleFilesAreInTheMount(t *testing.T) {
	t.Parallel()
	c := readPrometheusConfig(t)
	if len(c.RuleFiles) == 0 {
		t.Fatal("prometheus.yml loads no rule files")
	}
	for _, pattern := range c.RuleFiles {
		inContainer := pattern
		if !filepath.IsAbs(inContainer) {
			inContainer = filepath.Join("/etc/prometheus", inContainer) // relative to the config file
		}
		rel, err := filepath.Rel("/etc/prometheus", inContainer)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("prometheus.yml: rule_files %q is outside /etc/prometheus, the mounted deploy/prometheus", pattern)
			continue
		}
		matches, err := filepath.Glob(filepath.Join("prometheus", rel))
		if err != nil || len(matches) == 0 {
			t.Errorf("prometheus.yml: rule_files %q matches nothing in deploy/prometheus (%v)", pattern, err)
			continue
		}
		for _, m := range matches {
			var doc map[string]any
			if !readYAML(t, m, &doc) {
				continue
			}
			keys := make([]string, 0, len(doc))
			for k := range doc {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, []string{"groups"}) {
				t.Errorf("%s, matched by rule_files %q, is not a rules file (top-level keys %v)", m, pattern, keys)
			}
		}
	}
}

// hostPath maps a path inside svc's container to the repository file or directory mounted there, "" when
// no bind mount holds it.
func hostPath(svc types.ServiceConfig, inContainer string) string {
	best, host := "", ""
	for _, v := range svc.Volumes {
		if v.Type != types.VolumeTypeBind || len(v.Target) <= len(best) {
			continue
		}
		if rel, err := filepath.Rel(v.Target, inContainer); err == nil && !strings.HasPrefix(rel, "..") {
			best, host = v.Target, filepath.Join(v.Source, rel)
		}
	}
	return host
}

// TestGrafanaProvisioningFindsPrometheusAndTheDashboards reads Grafana's provisioning as the container sees
// it: each data source's URL is a service of the file on a port it serves, and each dashboard provider's
// path is a mounted directory of this repository that holds dashboards.
func TestGrafanaProvisioningFindsPrometheusAndTheDashboards(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	grafana := p.Services["grafana"]
	read := func(kind string) []map[string]any {
		dir := hostPath(grafana, "/etc/grafana/provisioning/"+kind)
		files, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
		if dir == "" || len(files) == 0 {
			t.Errorf("grafana: no %s provisioned: nothing of the repository at /etc/grafana/provisioning/%s/*.yml (%q)", kind, kind, dir)
		}
		var docs []map[string]any
		for _, f := range files {
			var doc map[string]any
			if !readYAML(t, f, &doc) {
				continue
			}
			docs = append(docs, doc)
		}
		return docs
	}
	list := func(doc map[string]any, key string) []map[string]any {
		items, _ := doc[key].([]any)
		var out []map[string]any
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	for _, doc := range read("datasources") {
		for _, ds := range list(doc, "datasources") {
			url, _ := ds["url"].(string)
			host, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"))
			if err != nil {
				t.Errorf("grafana data source %v: url %q: %v", ds["name"], url, err)
				continue
			}
			svc, ok := p.Services[host]
			if !ok || !listenPorts(t, host, svc)[port] {
				t.Errorf("grafana data source %v: %s is not a service of docker-compose.yml serving port %s", ds["name"], url, port)
			}
		}
	}
	for _, doc := range read("dashboards") {
		for _, pr := range list(doc, "providers") {
			opts, _ := pr["options"].(map[string]any)
			path, _ := opts["path"].(string)
			dir := hostPath(grafana, path)
			dashboards, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if dir == "" || len(dashboards) == 0 {
				t.Errorf("grafana dashboard provider %v: path %q holds no dashboard of the repository (mounted from %q)", pr["name"], path, dir)
			}
		}
	}
}
