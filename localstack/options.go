package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// Development credentials of the local stack, printed at start. Outside it a missing secret or token is a
// start-up error (docs/http-api.md): these never leave this command, and it refuses them on an API that listens
// beyond loopback (requireOwnSecretsBeyondLoopback).
const (
	devWebhookSecret = "dev-webhook-secret"
	devAdminToken    = "dev-admin-token"
)

// localIP is where every listener of the stack binds but the API (--http-addr): nothing is exposed.
const localIP = "127.0.0.1"

// Flag names, used in the messages that tell the user which flag to change.
const (
	flagHTTPAddr     = "http-addr"
	flagTemporalPort = "temporal-port"
	flagUIPort       = "ui-port"
	flagRedisPort    = "redis-port"
	flagProviderPort = "provider-port"
)

// options is the command line and the environment, validated.
type options struct {
	dataDir      string // absolute; empty with --ephemeral
	ephemeral    bool
	temporalPort int
	uiPort       int
	redisPort    int
	providerPort int
	demo         bool
	// pprofAddr serves net/http/pprof when set (--pprof-addr), to see where a load's time goes.
	pprofAddr string
	// externalTemporal and externalRedis are set when TEMPORAL_ADDRESS / a Redis form (REDIS_ADDR,
	// REDIS_CLUSTER_ADDRS, REDIS_SENTINEL_ADDRS) point at real servers.
	externalTemporal bool
	externalRedis    bool
	// externalProvider is set when REFUND_PROVIDER_URL points at a real refund provider (or a simulator of
	// one's own); else the stack serves the refund provider simulator on providerPort.
	externalProvider bool
	// cfg is what the worker and the API read, with the local stack's defaults filled in.
	cfg config.Config
}

func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("localstack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./localstack [flags]

Runs ordersaga on this machine in one process: Temporal server and UI, Redis, the database, the worker, the
order API, the reconciliation Schedule, and the refund sender with a refund provider simulator. Environment
variables (README, "Configuration") choose real Redis (REDIS_ADDR, REDIS_CLUSTER_ADDRS or
REDIS_SENTINEL_ADDRS), MySQL (MYSQL_DSN), Temporal (TEMPORAL_ADDRESS) or refund provider (REFUND_PROVIDER_URL)
instead of the embedded ones.

Flags:
`)
		fs.PrintDefaults()
	}
	defaultHTTP := strings.TrimSpace(getenv("HTTP_ADDR"))
	if defaultHTTP == "" {
		defaultHTTP = "127.0.0.1:8080"
	}
	httpAddr := fs.String(flagHTTPAddr, defaultHTTP, "`host:port` of the order API (HTTP_ADDR sets the default)")
	fs.StringVar(&o.dataDir, "data-dir", ".localstack", "`directory` of the Temporal and order databases and the embedded Redis snapshot")
	fs.BoolVar(&o.ephemeral, "ephemeral", false, "keep everything in memory: nothing is written, nothing survives a restart")
	fs.IntVar(&o.temporalPort, flagTemporalPort, 7233, "`port` of the in-process Temporal server's frontend (gRPC)")
	fs.IntVar(&o.uiPort, flagUIPort, 8233, "`port` of the Temporal UI")
	fs.IntVar(&o.redisPort, flagRedisPort, 6380, "`port` of the embedded Redis (unused with REDIS_ADDR, REDIS_CLUSTER_ADDRS or REDIS_SENTINEL_ADDRS)")
	fs.IntVar(&o.providerPort, flagProviderPort, refundsim.DefaultPort, "`port` of the refund provider simulator the refund sender sends to (unused with REFUND_PROVIDER_URL)")
	fs.BoolVar(&o.demo, "demo", true, "create the demo SKUs when the inventory is empty")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "`host:port` to serve Go's profiler on (/debug/pprof/; off when empty), e.g. during a flash sale: go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=10")
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	for name, port := range map[string]int{flagTemporalPort: o.temporalPort, flagUIPort: o.uiPort, flagRedisPort: o.redisPort,
		flagProviderPort: o.providerPort} {
		if port < 1 || port > 65535 {
			return o, fmt.Errorf("--%s=%d: want a port between 1 and 65535", name, port)
		}
	}
	if o.ephemeral {
		o.dataDir = ""
	} else {
		abs, err := filepath.Abs(o.dataDir)
		if err != nil {
			return o, fmt.Errorf("--data-dir: %w", err)
		}
		o.dataDir = abs
	}
	o.externalTemporal = strings.TrimSpace(getenv("TEMPORAL_ADDRESS")) != ""
	for _, v := range []string{"REDIS_ADDR", "REDIS_CLUSTER_ADDRS", "REDIS_SENTINEL_ADDRS"} {
		o.externalRedis = o.externalRedis || strings.TrimSpace(getenv(v)) != ""
	}
	o.externalProvider = strings.TrimSpace(getenv("REFUND_PROVIDER_URL")) != ""

	// The local stack's defaults, under whatever the environment sets.
	defaults := map[string]string{
		"HTTP_ADDR":              *httpAddr,
		"LOG_FORMAT":             "text",
		"PAYMENT_WEBHOOK_SECRET": devWebhookSecret,
		"ADMIN_TOKEN":            devAdminToken,
		"TEMPORAL_ADDRESS":       fmt.Sprintf("%s:%d", localIP, o.temporalPort),
		// The refund sender sends to the in-process simulator, often enough that the tour sees a refund
		// reach it within seconds.
		"REFUND_PROVIDER_URL":    "http://" + devserver.HostPort(localIP, o.providerPort),
		"REFUND_PROVIDER_SECRET": refundsim.LocalStackSecret,
		"REFUND_SEND_INTERVAL":   "2s",
	}
	if !o.externalRedis {
		defaults["REDIS_ADDR"] = fmt.Sprintf("%s:%d", localIP, o.redisPort)
	}
	if o.dataDir != "" {
		defaults["SQLITE_PATH"] = filepath.Join(o.dataDir, "ordersaga.db")
	}
	env := func(name string) string {
		if name == "HTTP_ADDR" {
			return *httpAddr // the flag wins; its default came from HTTP_ADDR
		}
		if v := getenv(name); strings.TrimSpace(v) != "" {
			return v
		}
		return defaults[name]
	}
	cfg, err := config.FromEnv(env)
	if err != nil {
		return o, err
	}
	addrFrom := "HTTP_ADDR=" + cfg.HTTPAddr
	fs.Visit(func(f *flag.Flag) {
		if f.Name == flagHTTPAddr {
			addrFrom = "--" + flagHTTPAddr + "=" + cfg.HTTPAddr
		}
	})
	if err := requireOwnSecretsBeyondLoopback(cfg, addrFrom); err != nil {
		return o, err
	}
	o.cfg = cfg
	return o, nil
}

// requireOwnSecretsBeyondLoopback refuses the development webhook secret and admin token (printed at start,
// and in the source) on an API that others can reach: anyone could pay orders and set stock. addrFrom names
// where the address came from (the flag or HTTP_ADDR), for the message.
func requireOwnSecretsBeyondLoopback(cfg config.Config, addrFrom string) error {
	host, _, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil || isLoopback(host) {
		return nil // config.FromEnv reported a malformed address already
	}
	var missing []string
	if slices.Contains(cfg.PaymentWebhookSecrets, devWebhookSecret) {
		missing = append(missing, "PAYMENT_WEBHOOK_SECRET")
	}
	if cfg.AdminToken == devAdminToken {
		missing = append(missing, "ADMIN_TOKEN")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s listens beyond loopback, where the development %s would guard the API: set %s "+
		"to values of your own, or listen on 127.0.0.1", addrFrom, strings.Join(missing, " and "), strings.Join(missing, " and "))
}

// isLoopback reports whether host reaches this machine only: 127.0.0.0/8, ::1 or localhost. An empty host,
// 0.0.0.0, :: or any other name or address does not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// apiDrain bounds the API's graceful shutdown: a reservation in flight may take api.DefaultPlaceTimeout.
const apiDrain = api.DefaultPlaceTimeout + 5*time.Second
