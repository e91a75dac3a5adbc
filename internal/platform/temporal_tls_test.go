package platform_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestDialTemporal_TLS dials an in-process Temporal server behind a TLS frontend that requires a client
// certificate of the test's CA (mTLS), with the settings a process reads, and checks what gets through: the
// right CA, client certificate and server name with an API key reach the server and carry the key as a
// bearer token; every wrong setting fails to dial, naming TEMPORAL_ADDRESS.
func TestDialTemporal_TLS(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		auths []string
	)
	record := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("authorization"); len(v) > 0 {
			mu.Lock()
			auths = append(auths, v...)
			mu.Unlock()
		}
		return h(ctx, req)
	}
	srv := sagatest.NewServer(t, temporal.WithChainedFrontendGrpcInterceptors(record))
	ca := testenv.NewCA(t, "temporal")
	frontend := tlsFrontend(t, srv.GetFrontendHostPort(), ca.Server(t, "temporal.test").TLS, ca.Pool())
	cert := ca.Client(t, "ordersaga-worker")
	stranger := testenv.NewCA(t, "stranger").Client(t, "stranger")
	logger := slog.New(slog.DiscardHandler)
	cfgOf := func(t *testing.T, addr string, vars map[string]string) config.Config {
		t.Helper()
		cfg, err := config.FromEnv(func(k string) string {
			switch k {
			case "TEMPORAL_ADDRESS":
				return addr
			case "TEMPORAL_NAMESPACE":
				return srv.GetDefaultNamespace()
			}
			return vars[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	mtls := map[string]string{"TEMPORAL_TLS_CA": ca.PEMPath, "TEMPORAL_TLS_CERT": cert.CertPath,
		"TEMPORAL_TLS_KEY": cert.KeyPath, "TEMPORAL_TLS_SERVER_NAME": "temporal.test"}

	t.Run("mtls_and_an_api_key_reach_the_server", func(t *testing.T) {
		t.Parallel()
		vars := map[string]string{"TEMPORAL_API_KEY": "key-of-the-test"}
		for k, v := range mtls {
			vars[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := platform.DialTemporal(ctx, cfgOf(t, frontend, vars), logger, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			t.Fatalf("check health over mTLS: %v", err)
		}
		if err := platform.RegisterSearchAttributes(ctx, c, srv.GetDefaultNamespace()); err != nil {
			t.Fatalf("a call over mTLS: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(auths, "Bearer key-of-the-test") {
			t.Errorf("the server saw authorization %q, want the API key as a bearer token", auths)
		}
	})

	bad := []struct {
		name string
		addr string
		vars map[string]string
	}{
		{"no_client_certificate", frontend, map[string]string{"TEMPORAL_TLS_CA": ca.PEMPath, "TEMPORAL_TLS_SERVER_NAME": "temporal.test"}},
		{"client_certificate_of_another_ca", frontend, map[string]string{"TEMPORAL_TLS_CA": ca.PEMPath,
			"TEMPORAL_TLS_CERT": stranger.CertPath, "TEMPORAL_TLS_KEY": stranger.KeyPath, "TEMPORAL_TLS_SERVER_NAME": "temporal.test"}},
		{"server_name_not_in_its_certificate", frontend, map[string]string{"TEMPORAL_TLS_CA": ca.PEMPath,
			"TEMPORAL_TLS_CERT": cert.CertPath, "TEMPORAL_TLS_KEY": cert.KeyPath, "TEMPORAL_TLS_SERVER_NAME": "elsewhere.test"}},
		{"server_ca_not_trusted", frontend, map[string]string{"TEMPORAL_TLS": "true",
			"TEMPORAL_TLS_CERT": cert.CertPath, "TEMPORAL_TLS_KEY": cert.KeyPath}},
		{"plaintext_to_a_tls_frontend", frontend, nil},
		{"tls_to_a_plaintext_frontend", srv.GetFrontendHostPort(), mtls},
	}
	for _, tt := range bad {
		t.Run(tt.name+"_fails_to_dial", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := platform.DialTemporal(ctx, cfgOf(t, tt.addr, tt.vars), logger, nil)
			if err == nil {
				c.Close()
				t.Fatal("dialled")
			}
			if !strings.Contains(err.Error(), "TEMPORAL_ADDRESS="+tt.addr) {
				t.Errorf("error %q does not name TEMPORAL_ADDRESS", err)
			}
		})
	}
}

// tlsFrontend listens on TLS in front of a plaintext gRPC backend, requiring a client certificate signed by
// clientCAs, and returns its address. It speaks HTTP/2 (ALPN h2) and copies bytes.
func tlsFrontend(t *testing.T, backend string, cert tls.Certificate, clientCAs *x509.CertPool) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go pipe(conn.(*tls.Conn), backend)
		}
	}()
	return ln.Addr().String()
}

func pipe(conn *tls.Conn, backend string) {
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		return
	}
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan error, 2)
	go func() { _, err := io.Copy(up, conn); done <- err }()
	go func() { _, err := io.Copy(conn, up); done <- err }()
	if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
}
