package deploy_test

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// builderOf returns the service that builds image, "" when none does.
func builderOf(p *types.Project, image string) string {
	for name, svc := range p.Services {
		if svc.Build != nil && svc.Image == image {
			return name
		}
	}
	return ""
}

// composeDependsOn reports whether service from waits for service to, directly or through others.
func composeDependsOn(p *types.Project, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(name string) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		for dep := range p.Services[name].DependsOn {
			if dep == to || walk(dep) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// TestComposeBuildsTheAppImageOnce: current Compose builds through Bake, which exports every service's build
// of a tag at once, so two services that both build ordersaga:dev fail a first build ("already exists").
// One service builds the tag; every other app service runs it by name, never pulls it (it is in no
// registry) and depends on the builder, so `docker compose up <it>` alone builds the image first.
func TestComposeBuildsTheAppImageOnce(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	builders := map[string][]string{}
	for name, svc := range p.Services {
		if svc.Build == nil {
			continue
		}
		if svc.Image == "" {
			t.Errorf("%s: builds without an image name, so no other service can run what it built", name)
		}
		builders[svc.Image] = append(builders[svc.Image], name)
	}
	for image, names := range builders {
		if len(names) > 1 {
			slices.Sort(names)
			t.Errorf("%s is built by %v: Compose exports the tag once per build and a first build fails; build it in one service", image, names)
		}
	}
	for name := range appServices {
		svc := p.Services[name]
		if svc.Build != nil {
			continue
		}
		builder := builderOf(p, svc.Image)
		if builder == "" {
			t.Errorf("%s: runs %q, which no service of the file builds", name, svc.Image)
			continue
		}
		if svc.PullPolicy != types.PullPolicyNever {
			t.Errorf("%s: pull_policy %q: %s is built here, not pulled (want never)", name, svc.PullPolicy, svc.Image)
		}
		if !composeDependsOn(p, name, builder) {
			t.Errorf("%s: does not depend on %s, which builds %s: `docker compose up %s` alone would not build it", name, builder, svc.Image, name)
		}
	}
}

// TestComposeWorkerHealthCheckAsksItsMetricsListener: the starter waits for a healthy worker; the worker's
// health check asks the listener METRICS_ADDR opens once its stores and Temporal answer.
func TestComposeWorkerHealthCheckAsksItsMetricsListener(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	svc := p.Services["worker"]
	_, port, err := net.SplitHostPort(environment(svc)["METRICS_ADDR"])
	if err != nil {
		t.Fatalf("worker: METRICS_ADDR: %v", err)
	}
	if svc.HealthCheck == nil || !strings.Contains(strings.Join(svc.HealthCheck.Test, " "), ":"+port+"/metrics") {
		t.Errorf("worker: the health check does not ask /metrics on METRICS_ADDR's port %s", port)
	}
}
