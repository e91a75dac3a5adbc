package config_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

func TestFromEnv_TemporalTLS(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "temporal")
	client := ca.Client(t, "ordersaga-worker")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := testenv.NewCA(t, "other").Client(t, "other")

	t.Run("off_by_default", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if tc, err := c.TemporalTLSConfig(); c.TemporalTLS || tc != nil || err != nil {
			t.Errorf("TLS %v, config %v, %v: want plaintext", c.TemporalTLS, tc, err)
		}
	})

	t.Run("mtls_loads_the_ca_the_client_certificate_and_the_server_name", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{
			"TEMPORAL_TLS_CA": ca.PEMPath, "TEMPORAL_TLS_CERT": client.CertPath, "TEMPORAL_TLS_KEY": client.KeyPath,
			"TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
		}))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := c.TemporalTLSConfig()
		if err != nil || tc == nil || !c.TemporalTLS {
			t.Fatalf("TLS %v, config %v, %v", c.TemporalTLS, tc, err)
		}
		if tc.ServerName != "temporal.internal" {
			t.Errorf("ServerName %q", tc.ServerName)
		}
		if tc.RootCAs == nil || !tc.RootCAs.Equal(ca.Pool()) {
			t.Error("RootCAs is not the CA of TEMPORAL_TLS_CA alone")
		}
		if _, err := ca.Cert.Verify(x509.VerifyOptions{Roots: tc.RootCAs}); err != nil {
			t.Errorf("the CA does not verify against RootCAs: %v", err)
		}
		if len(tc.Certificates) != 1 || !tc.Certificates[0].Leaf.Equal(client.TLS.Leaf) {
			t.Errorf("Certificates %d: want the client certificate of TEMPORAL_TLS_CERT", len(tc.Certificates))
		}
	})

	t.Run("tls_alone_trusts_the_system_roots", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{"TEMPORAL_TLS": "true"}))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := c.TemporalTLSConfig()
		if err != nil || tc == nil || tc.RootCAs != nil || len(tc.Certificates) != 0 {
			t.Errorf("config %+v, %v: want TLS with the system's roots and no client certificate", tc, err)
		}
	})

	t.Run("an_api_key_implies_tls", func(t *testing.T) {
		t.Parallel()
		c, err := config.FromEnv(env(map[string]string{"TEMPORAL_API_KEY": "key-1"}))
		if err != nil {
			t.Fatal(err)
		}
		if tc, _ := c.TemporalTLSConfig(); !c.TemporalTLS || tc == nil || c.TemporalAPIKey != "key-1" {
			t.Errorf("TLS %v, config %v, key %q", c.TemporalTLS, tc, c.TemporalAPIKey)
		}
	})

	bad := []struct {
		name string
		env  map[string]string
		want []string // in the error
	}{
		{"unreadable_ca", map[string]string{"TEMPORAL_TLS_CA": filepath.Join(t.TempDir(), "missing.pem")}, []string{"TEMPORAL_TLS_CA", "no such file"}},
		{"ca_without_pem", map[string]string{"TEMPORAL_TLS_CA": junk}, []string{"TEMPORAL_TLS_CA", "no PEM certificate"}},
		{"cert_without_key", map[string]string{"TEMPORAL_TLS_CERT": client.CertPath}, []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"}},
		{"key_without_cert", map[string]string{"TEMPORAL_TLS_KEY": client.KeyPath}, []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"}},
		{"cert_not_pem", map[string]string{"TEMPORAL_TLS_CERT": junk, "TEMPORAL_TLS_KEY": client.KeyPath}, []string{"TEMPORAL_TLS_CERT"}},
		{"key_of_another_cert", map[string]string{"TEMPORAL_TLS_CERT": client.CertPath, "TEMPORAL_TLS_KEY": other.KeyPath}, []string{"TEMPORAL_TLS_KEY"}},
		{"tls_off_with_a_ca", map[string]string{"TEMPORAL_TLS": "false", "TEMPORAL_TLS_CA": ca.PEMPath}, []string{"TEMPORAL_TLS", "TEMPORAL_TLS_CA"}},
		{"tls_off_with_an_api_key", map[string]string{"TEMPORAL_TLS": "0", "TEMPORAL_API_KEY": "secret-key"}, []string{"TEMPORAL_TLS", "TEMPORAL_API_KEY"}},
		{"tls_not_a_bool", map[string]string{"TEMPORAL_TLS": "on"}, []string{"TEMPORAL_TLS"}},
	}
	for _, tt := range bad {
		t.Run(tt.name+"_is_an_error_naming_the_variable", func(t *testing.T) {
			t.Parallel()
			_, err := config.FromEnv(env(tt.env))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret-key") {
				t.Errorf("error %q carries the API key", err)
			}
		})
	}
}
