package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLocalStackBeyondLoopbackNeedsRealSecrets: the development webhook secret and admin token are printed
// and in the source, so a stack whose API listens beyond loopback refuses to start without secrets of its
// own, naming the variables and the address; it fails before anything is started or written.
func TestLocalStackBeyondLoopbackNeedsRealSecrets(t *testing.T) {
	t.Parallel()
	const (
		secret = "a-real-webhook-secret"
		token  = "a-real-admin-token"
	)
	for _, tc := range []struct {
		name string
		addr string            // --http-addr ("" = not given)
		env  map[string]string // the environment
		want []string          // in the error; none = it starts
	}{
		{"all_interfaces_without_secrets", "0.0.0.0:8080", nil,
			[]string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN", "--http-addr", "0.0.0.0:8080"}},
		{"empty_host_without_secrets", ":8080", nil, []string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN", ":8080"}},
		{"ipv6_any_without_secrets", "[::]:8080", nil, []string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN", "[::]:8080"}},
		{"a_lan_address_without_the_token", "192.168.1.10:8080", map[string]string{"PAYMENT_WEBHOOK_SECRET": secret},
			[]string{"ADMIN_TOKEN", "192.168.1.10:8080"}},
		{"a_host_name_without_the_secret", "shop.example:8080", map[string]string{"ADMIN_TOKEN": token},
			[]string{"PAYMENT_WEBHOOK_SECRET", "shop.example:8080"}},
		{"the_development_values_set_explicitly", "0.0.0.0:8080",
			map[string]string{"PAYMENT_WEBHOOK_SECRET": devWebhookSecret, "ADMIN_TOKEN": devAdminToken},
			[]string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN"}},
		{"http_addr_from_the_environment", "", map[string]string{"HTTP_ADDR": "0.0.0.0:8080"},
			[]string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN", "HTTP_ADDR", "0.0.0.0:8080"}},
		{"all_interfaces_with_secrets", "0.0.0.0:8080", map[string]string{"PAYMENT_WEBHOOK_SECRET": secret, "ADMIN_TOKEN": token}, nil},
		{"loopback_v4", "127.0.0.1:8080", nil, nil},
		{"loopback_v4_anywhere_in_8", "127.0.0.2:8080", nil, nil},
		{"loopback_v6", "[::1]:8080", nil, nil},
		{"localhost", "localhost:8080", nil, nil},
		{"the_default", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "data")
			args := []string{"localstack", "--data-dir", dataDir}
			if tc.addr != "" {
				args = append(args, "--http-addr", tc.addr)
			}
			getenv := func(name string) string { return tc.env[name] }
			if tc.want == nil {
				if _, err := parseOptions(args, getenv, io.Discard); err != nil {
					t.Fatalf("options: %v, want the stack to start", err)
				}
				return
			}
			if _, err := parseOptions(args, getenv, io.Discard); err == nil {
				t.Fatal("options accepted, want an error") // (run would start the stack on the test's real ports)
			}
			start := time.Now()
			err := run(t.Context(), args, getenv, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("started, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %s", err, w)
				}
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the refusal took %v: it must come before anything starts", took)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("the data directory was created (%v): the refusal must come before anything is written", err)
			}
		})
	}
}
