package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/ordersaga/ordersaga/internal/config"
)

// TestComposeClusterIsWhatTheAppsReach: with docker-compose.cluster.yml over the base file, the worker and the
// starter read the cluster form (REDIS_CLUSTER_ADDRS, no REDIS_ADDR) naming every node, wait for the one-shot
// that joins the nodes, and acknowledge markers by a replica (the cluster form's default); each node runs in
// cluster mode announcing its own service name, with the single Redis's image, persistence and eviction
// policy, a health check and a volume of its own; the one-shot waits for every node to be healthy.
func TestComposeClusterIsWhatTheAppsReach(t *testing.T) {
	t.Parallel()
	p := composeSetups(t)["with docker-compose.cluster.yml"]
	var nodes []string
	for name := range p.Services {
		if strings.HasPrefix(name, "redis-node-") {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	if len(nodes) != 6 {
		t.Fatalf("nodes %v, want 6 (3 masters, a replica each)", nodes)
	}
	for name := range appServices {
		env := environment(p.Services[name])
		cfg, err := config.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		form, addrs := cfg.RedisForm()
		var hosts []string
		for _, a := range addrs {
			hosts = append(hosts, strings.TrimSuffix(a, ":6379"))
		}
		slices.Sort(hosts)
		if form != config.RedisCluster || !slices.Equal(hosts, nodes) {
			t.Errorf("%s reaches %s %v, want the cluster form naming every node on 6379 %v", name, form, addrs, nodes)
		}
		if cfg.RedisMarkerReplicas != 1 {
			t.Errorf("%s: markers acknowledged by %d replicas, want 1 (the cluster form's default)", name, cfg.RedisMarkerReplicas)
		}
		if c := p.Services[name].DependsOn["redis-cluster-create"].Condition; c != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("%s waits for redis-cluster-create with %q, want it completed", name, c)
		}
	}

	single := p.Services["redis"]
	volumes := map[string]string{}
	for _, name := range nodes {
		svc := p.Services[name]
		cmd := strings.Join(svc.Command, " ")
		for _, want := range []string{"--cluster-enabled yes", `--cluster-announce-hostname "$0"`,
			"--cluster-preferred-endpoint-type hostname", "--appendonly yes", "--maxmemory-policy noeviction"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command %q lacks %s", name, cmd, want)
			}
		}
		if len(svc.Command) != 4 || svc.Command[3] != name {
			t.Errorf("%s: command %q announces %q ($0), want its own service name", name, svc.Command, svc.Command[len(svc.Command)-1])
		}
		if svc.Image != single.Image {
			t.Errorf("%s: image %s, want the single Redis's %s", name, svc.Image, single.Image)
		}
		if svc.HealthCheck == nil || len(svc.HealthCheck.Test) == 0 {
			t.Errorf("%s: no health check", name)
		}
		vol := ""
		for _, v := range svc.Volumes {
			if v.Target == "/data" {
				vol = v.Source
			}
		}
		if vol == "" || volumes[vol] != "" {
			t.Errorf("%s: /data on volume %q (also %q's): want a volume of its own", name, vol, volumes[vol])
		}
		volumes[vol] = name
		if c := p.Services["redis-cluster-create"].DependsOn[name].Condition; c != types.ServiceConditionHealthy {
			t.Errorf("redis-cluster-create waits for %s with %q, want it healthy", name, c)
		}
	}
	create := strings.Join(p.Services["redis-cluster-create"].Command, " ")
	if !strings.Contains(create, "--cluster-replicas 1") || !strings.Contains(create, "cluster_state:ok") {
		t.Errorf("redis-cluster-create: %q, want --cluster-replicas 1 and a wait for cluster_state:ok", create)
	}
}

// TestComposeSingleRedisSyncsEveryWrite: the single Redis has no replica to acknowledge an idempotency
// marker, so it writes each one to disk before it answers (appendfsync always, docs/operations.md); the
// cluster's nodes have their replicas (REDIS_MARKER_REPLICAS) and keep everysec.
func TestComposeSingleRedisSyncsEveryWrite(t *testing.T) {
	t.Parallel()
	cmd := strings.Join(loadCompose(t).Services["redis"].Command, " ")
	for _, want := range []string{"--appendonly yes", "--appendfsync always", "--maxmemory-policy noeviction"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis: command %q lacks %s", cmd, want)
		}
	}
}
