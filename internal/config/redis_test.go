package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// secret is the password every case of these tests sets: no error may carry it.
const secret = "s3cret-pw-9f2"

func TestFromEnv_RedisForms(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		vars  map[string]string
		form  config.RedisForm
		addrs []string
		where string
	}{
		"one_server": {
			vars: map[string]string{"REDIS_ADDR": "10.0.0.1:6379"},
			form: config.RedisServer, addrs: []string{"10.0.0.1:6379"}, where: "REDIS_ADDR=10.0.0.1:6379",
		},
		"cluster_seeds_trimmed": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": " 10.0.0.1:7000, 10.0.0.2:7000 ,10.0.0.3:7000"},
			form: config.RedisCluster, addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"},
			where: "REDIS_CLUSTER_ADDRS=10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
		},
		"one_cluster_seed_is_still_a_cluster": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "redis-cluster.internal:6379"},
			form: config.RedisCluster, addrs: []string{"redis-cluster.internal:6379"},
			where: "REDIS_CLUSTER_ADDRS=redis-cluster.internal:6379",
		},
		"sentinel": {
			vars: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379,s2:26379", "REDIS_SENTINEL_MASTER": "orders",
				"REDIS_SENTINEL_PASSWORD": secret},
			form: config.RedisSentinel, addrs: []string{"s1:26379", "s2:26379"},
			where: "REDIS_SENTINEL_ADDRS=s1:26379,s2:26379 (REDIS_SENTINEL_MASTER=orders)",
		},
		"none": {form: config.RedisNone},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := config.FromEnv(env(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			form, addrs := c.RedisForm()
			if form != tt.form || !slices.Equal(addrs, tt.addrs) {
				t.Errorf("RedisForm() = %v, %q; want %v, %q", form, addrs, tt.form, tt.addrs)
			}
			if got := c.RedisWhere(); got != tt.where {
				t.Errorf("RedisWhere() = %q, want %q", got, tt.where)
			}
			if strings.Contains(c.RedisWhere(), secret) {
				t.Errorf("RedisWhere() %q holds the password", c.RedisWhere())
			}
		})
	}
}

// TestFromEnv_RedisMarkerReplicas: the idempotency markers wait for one replica where a failover may promote
// one (a cluster, Sentinel), for none on one server, and for what REDIS_MARKER_REPLICAS says when set.
func TestFromEnv_RedisMarkerReplicas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		vars map[string]string
		want int
	}{
		{map[string]string{"REDIS_ADDR": "a:1"}, 0},
		{map[string]string{"REDIS_CLUSTER_ADDRS": "a:1"}, 1},
		{map[string]string{"REDIS_SENTINEL_ADDRS": "a:1", "REDIS_SENTINEL_MASTER": "m"}, 1},
		{map[string]string{"REDIS_CLUSTER_ADDRS": "a:1", "REDIS_MARKER_REPLICAS": "0"}, 0},
		{map[string]string{"REDIS_ADDR": "a:1", "REDIS_MARKER_REPLICAS": "2"}, 2},
	} {
		cfg, err := config.FromEnv(env(c.vars))
		if err != nil {
			t.Fatalf("%v: %v", c.vars, err)
		}
		if cfg.RedisMarkerReplicas != c.want {
			t.Errorf("%v: RedisMarkerReplicas = %d, want %d", c.vars, cfg.RedisMarkerReplicas, c.want)
		}
	}
}

func TestFromEnv_RedisCredentials(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(map[string]string{
		"REDIS_ADDR": "10.0.0.1:6379", "REDIS_USERNAME": " orders ", "REDIS_PASSWORD": secret,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisUsername != "orders" || c.RedisPassword != secret {
		t.Errorf("username %q, password %q", c.RedisUsername, c.RedisPassword)
	}
}

// TestFromEnv_RedisErrorsNameTheVariable: each bad Redis setting stops the start with an error naming its
// variable (and, for an address, the bad entry), and never the password set beside it.
func TestFromEnv_RedisErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := testenv.NewCA(t, "redis")
	tests := map[string]struct {
		vars map[string]string
		want []string // every one must be in the error
	}{
		"server_and_cluster": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_CLUSTER_ADDRS": "b:1"},
			want: []string{"REDIS_ADDR and REDIS_CLUSTER_ADDRS are both set: set exactly one of REDIS_ADDR, REDIS_CLUSTER_ADDRS, REDIS_SENTINEL_ADDRS"},
		},
		"server_and_sentinel": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_SENTINEL_ADDRS": "b:1", "REDIS_SENTINEL_MASTER": "m"},
			want: []string{"REDIS_ADDR and REDIS_SENTINEL_ADDRS are both set", "set exactly one of"},
		},
		"all_three": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_CLUSTER_ADDRS": "b:1", "REDIS_SENTINEL_ADDRS": "c:1", "REDIS_SENTINEL_MASTER": "m"},
			want: []string{"REDIS_ADDR, REDIS_CLUSTER_ADDRS and REDIS_SENTINEL_ADDRS are all set", "set exactly one of"},
		},
		"marker_replicas_not_a_number": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_MARKER_REPLICAS": "one"},
			want: []string{`REDIS_MARKER_REPLICAS="one"`, "0 to 16"},
		},
		"marker_replicas_negative": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "a:1", "REDIS_MARKER_REPLICAS": "-1"},
			want: []string{`REDIS_MARKER_REPLICAS="-1"`},
		},
		"marker_replicas_too_many": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "a:1", "REDIS_MARKER_REPLICAS": "17"},
			want: []string{`REDIS_MARKER_REPLICAS="17"`},
		},
		"server_not_host_port": {
			vars: map[string]string{"REDIS_ADDR": "6379"},
			want: []string{"REDIS_ADDR", `"6379"`, "host:port"},
		},
		"server_no_port": {
			vars: map[string]string{"REDIS_ADDR": "redis:"},
			want: []string{"REDIS_ADDR", `"redis:"`},
		},
		"server_url_with_password": {
			vars: map[string]string{"REDIS_ADDR": "rediss://orders:" + secret + "@redis.example.com:6380"},
			want: []string{"REDIS_ADDR", "@redis.example.com:6380", "host:port"},
		},
		"cluster_url_with_password": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000,redis://:" + secret + "@b:7000"},
			want: []string{"REDIS_CLUSTER_ADDRS", "@b:7000"},
		},
		"cluster_bad_entry": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000,b,c:7000"},
			want: []string{"REDIS_CLUSTER_ADDRS", `"b"`, "host:port"},
		},
		"cluster_empty_entry": {
			vars: map[string]string{"REDIS_CLUSTER_ADDRS": "a:7000,,c:7000"},
			want: []string{"REDIS_CLUSTER_ADDRS", "empty"},
		},
		"sentinel_bad_entry": {
			vars: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379,s2", "REDIS_SENTINEL_MASTER": "m"},
			want: []string{"REDIS_SENTINEL_ADDRS", `"s2"`},
		},
		"sentinel_without_master": {
			vars: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379"},
			want: []string{"REDIS_SENTINEL_MASTER is not set", "REDIS_SENTINEL_ADDRS"},
		},
		"master_without_sentinels": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_SENTINEL_MASTER": "m"},
			want: []string{"REDIS_SENTINEL_MASTER", "without REDIS_SENTINEL_ADDRS"},
		},
		"sentinel_password_without_sentinels": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_SENTINEL_PASSWORD": secret},
			want: []string{"REDIS_SENTINEL_PASSWORD", "without REDIS_SENTINEL_ADDRS"},
		},
		"tls_not_a_bool": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS": "yes please"},
			want: []string{"REDIS_TLS", "true or false"},
		},
		"ca_without_tls": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS_CA_FILE": ca.PEMPath},
			want: []string{"REDIS_TLS_CA_FILE", "REDIS_TLS=true"},
		},
		"server_name_with_tls_false": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS": "false", "REDIS_TLS_SERVER_NAME": "redis.internal"},
			want: []string{"REDIS_TLS_SERVER_NAME", "REDIS_TLS=true"},
		},
		"ca_missing": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS": "true", "REDIS_TLS_CA_FILE": filepath.Join(dir, "none.pem")},
			want: []string{"REDIS_TLS_CA_FILE", "none.pem"},
		},
		"ca_without_certificate": {
			vars: map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS": "true", "REDIS_TLS_CA_FILE": junk},
			want: []string{"REDIS_TLS_CA_FILE", "no PEM certificate"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"REDIS_PASSWORD": secret}
			for k, v := range tt.vars {
				vars[k] = v
			}
			_, err := config.FromEnv(env(vars))
			if err == nil {
				t.Fatalf("%v: no error", tt.vars)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds the password", err)
			}
		})
	}
}

func TestFromEnv_RedisTLS(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "redis")

	t.Run("off_by_default", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{"REDIS_ADDR": "a:1"}))
		if err != nil {
			t.Fatal(err)
		}
		if tc, err := c.RedisTLSConfig(); c.RedisTLS || tc != nil || err != nil {
			t.Errorf("TLS %v, config %v, %v: want plaintext", c.RedisTLS, tc, err)
		}
	})

	t.Run("on_with_the_ca_and_the_server_name", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{
			"REDIS_CLUSTER_ADDRS": "a:1,b:1", "REDIS_TLS": "true", "REDIS_TLS_CA_FILE": ca.PEMPath,
			"REDIS_TLS_SERVER_NAME": "redis.internal",
		}))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := c.RedisTLSConfig()
		if err != nil || tc == nil {
			t.Fatalf("config %v, %v", tc, err)
		}
		if tc.ServerName != "redis.internal" {
			t.Errorf("ServerName %q", tc.ServerName)
		}
		if tc.RootCAs == nil || !tc.RootCAs.Equal(ca.Pool()) {
			t.Error("RootCAs is not the CA of REDIS_TLS_CA_FILE alone")
		}
	})

	t.Run("on_with_the_system_roots", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{"REDIS_ADDR": "a:1", "REDIS_TLS": "true"}))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := c.RedisTLSConfig()
		if err != nil || tc == nil {
			t.Fatalf("config %v, %v", tc, err)
		}
		if tc.RootCAs != nil || tc.ServerName != "" {
			t.Errorf("RootCAs %v, ServerName %q: want the system's roots and the host of each address", tc.RootCAs, tc.ServerName)
		}
	})
}

func TestRequireStores_AnyRedisForm(t *testing.T) {
	t.Parallel()
	db := map[string]string{"MYSQL_DSN": "u:p@tcp(db:3306)/o"}
	for name, vars := range map[string]map[string]string{
		"server":   {"REDIS_ADDR": "a:1"},
		"cluster":  {"REDIS_CLUSTER_ADDRS": "a:1,b:1"},
		"sentinel": {"REDIS_SENTINEL_ADDRS": "a:1", "REDIS_SENTINEL_MASTER": "m"},
	} {
		vars["MYSQL_DSN"] = db["MYSQL_DSN"]
		c, err := config.FromEnv(env(vars))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.RequireStores(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	c, err := config.FromEnv(env(db))
	if err != nil {
		t.Fatal(err)
	}
	err = c.RequireStores()
	if err == nil {
		t.Fatal("no Redis form: no error")
	}
	for _, name := range []string{"REDIS_ADDR", "REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL_ADDRS"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}
