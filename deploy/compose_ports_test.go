package deploy_test

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// hostPorts are the ports published on this machine: one .env variable each, defaulting to the port the
// README and the tools name.
var hostPorts = []struct {
	variable string
	service  string
	target   uint32 // the container's port
	def      string // the host port when the variable is unset
}{
	{"ORDER_API_PORT", "starter", 8080, "8080"},
	{"TEMPORAL_UI_PORT", "temporal-ui", 8080, "8233"},
	{"TEMPORAL_FRONTEND_PORT", "temporal", 7233, "7233"},
	{"MYSQL_PORT", "mysql", 3306, "3306"},
	{"PROMETHEUS_PORT", "prometheus", 9090, "9090"},
	{"GRAFANA_PORT", "grafana", 3000, "3000"},
}

// publishedPort returns the host port service publishes for target, "" when it does not.
func publishedPort(p *types.Project, service string, target uint32) string {
	for _, pc := range p.Services[service].Ports {
		if pc.Target == target {
			return pc.Published
		}
	}
	return ""
}

// TestComposeHostPortsComeFromEnv: each published port is set by its own variable of .env (a port taken on
// this machine moves without editing the file), and without it is today's port.
func TestComposeHostPortsComeFromEnv(t *testing.T) {
	t.Parallel()
	base := envExample(t)
	p := loadCompose(t)
	covered := 0
	for _, hp := range hostPorts {
		if got := publishedPort(p, hp.service, hp.target); got != hp.def {
			t.Errorf("%s: port %d published on %q without %s, want %s", hp.service, hp.target, got, hp.variable, hp.def)
		}
	}
	for name, svc := range p.Services {
		covered += len(svc.Ports)
		for _, pc := range svc.Ports {
			known := false
			for _, hp := range hostPorts {
				known = known || (hp.service == name && hp.target == pc.Target)
			}
			if !known {
				t.Errorf("%s: port %d is published without a variable of its own", name, pc.Target)
			}
		}
	}
	if covered != len(hostPorts) {
		t.Errorf("%d ports published, %d variables", covered, len(hostPorts))
	}
	for i, hp := range hostPorts {
		env := maps.Clone(base)
		moved := strconv.Itoa(41000 + i)
		env[hp.variable] = moved
		q, err := loadComposeWith(env)
		if err != nil {
			t.Fatalf("load with %s=%s: %v", hp.variable, moved, err)
		}
		if got := publishedPort(q, hp.service, hp.target); got != moved {
			t.Errorf("%s=%s: %s publishes port %d on %q", hp.variable, moved, hp.service, hp.target, got)
		}
		for _, other := range hostPorts {
			if other != hp && publishedPort(q, other.service, other.target) != other.def {
				t.Errorf("%s=%s moved %s's port %d too", hp.variable, moved, other.service, other.target)
			}
		}
	}
}

// TestEnvExampleListsTheHostPorts: .env.example shows each port variable, commented out, with its default, so
// `cp .env.example .env` changes nothing until one is uncommented.
func TestEnvExampleListsTheHostPorts(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	commented := regexp.MustCompile(`^#\s*([A-Z][A-Z0-9_]*)=(\S+)$`)
	shown := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := commented.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			shown[m[1]] = m[2]
		}
	}
	for _, hp := range hostPorts {
		if got, ok := shown[hp.variable]; !ok || got != hp.def {
			t.Errorf(".env.example: want the line \"# %s=%s\", got %q", hp.variable, hp.def, got)
		}
	}
}
