package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
)

func TestFlagsTakeSecretsFromTheEnvironment(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "tok", "PAYMENT_WEBHOOK_SECRET": "new,old", "CURRENCY": "EUR"}
	cfg, _, err := parseFlags([]string{"flashsale", "--rate", "100"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminToken != "tok" || cfg.WebhookSecret != "new,old" || cfg.Currency != "EUR" {
		t.Errorf("secrets from the environment not used: %+v", cfg)
	}
	if cfg.Concurrency != 4096 {
		t.Errorf("with --rate the in-flight bound defaults to 4096, got %d", cfg.Concurrency)
	}
	if !strings.HasPrefix(cfg.SKUPrefix, "FS-"+cfg.RunID) {
		t.Errorf("SKU prefix %q does not name the run %q", cfg.SKUPrefix, cfg.RunID)
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no admin token", []string{"flashsale"}, "--admin-token"},
		{"shares over one", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--pay-ratio", "0.8", "--cancel-ratio", "0.5"}, "must not exceed 1"},
		{"bad target", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--target", "localhost:8080"}, "--target"},
		{"unknown flag", []string{"flashsale", "--nope"}, "flag provided but not defined"},
		{"negative per-user limit", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--per-user-limit", "-1"}, "--per-user-limit -1: must not be negative"},
		{"price past the bound", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--price-cents", "1000000000001"}, "--price-cents 1000000000001: want 0 to 1000000000000"},
		{"bot ratio over one", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--bot-ratio", "1.5"}, "--bot-ratio 1.5"},
		{"negative bot ratio", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--bot-ratio", "-0.2"}, "--bot-ratio -0.2"},
		{"no bot attempts", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--bot-ratio", "0.1", "--bot-attempts", "0"}, "--bot-attempts 0"},
		{"bad provider check", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--provider-check", "maybe"}, `--provider-check "maybe": want auto, on or off`},
		{"provider not a URL", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--provider", "127.0.0.1:8091"}, `--provider "127.0.0.1:8091"`},
		{"bad provider check on a rejudge", []string{"flashsale", "--rejudge", "dir", "--target", "http://127.0.0.1:8080", "--provider-check", "yes"}, `--provider-check "yes"`},
		{"qty above the limit", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--per-user-limit", "2", "--qty", "3"}, "--qty 3 is above --per-user-limit 2"},
		{"stock shards past 64", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "--stock-shards", "65"}, "--stock-shards 65: want 1-64"},
		{"negative stock shards", []string{"flashsale", "--admin-token", "x", "--webhook-secret", "y", "-stock-shards", "-1"}, "--stock-shards -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// TestProviderFlags: the provider defaults to REFUND_PROVIDER_URL, else the local stack's; checked when it answers.
func TestProviderFlags(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "tok", "PAYMENT_WEBHOOK_SECRET": "hook"}
	getenv := func(k string) string { return env[k] }
	cfg, _, err := parseFlags([]string{"flashsale"}, getenv, &bytes.Buffer{})
	if err != nil || cfg.ProviderURL != sale.DefaultProviderURL || cfg.ProviderCheck != sale.ProviderCheckAuto {
		t.Fatalf("defaults: provider %q check %q, %v; want %s auto", cfg.ProviderURL, cfg.ProviderCheck, err, sale.DefaultProviderURL)
	}
	env["REFUND_PROVIDER_URL"] = "https://refunds.example/"
	cfg, _, err = parseFlags([]string{"flashsale", "--provider-check", "on"}, getenv, &bytes.Buffer{})
	if err != nil || cfg.ProviderURL != "https://refunds.example" || cfg.ProviderCheck != sale.ProviderCheckOn {
		t.Fatalf("from the environment: provider %q check %q, %v", cfg.ProviderURL, cfg.ProviderCheck, err)
	}
	cfg, _, err = parseFlags([]string{"flashsale", "--provider", "nonsense", "--provider-check", "off"}, getenv, &bytes.Buffer{})
	if err != nil || cfg.ProviderCheck != sale.ProviderCheckOff {
		t.Fatalf("off: the provider is not used, its URL not checked: %v", err)
	}
}

func TestLimitAndBotFlags(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "tok", "PAYMENT_WEBHOOK_SECRET": "hook"}
	cfg, _, err := parseFlags([]string{"flashsale", "--per-user-limit", "2", "--bot-ratio", "0.1", "--bot-attempts", "5"},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PerUserLimit != 2 || cfg.BotRatio != 0.1 || cfg.BotAttempts != 5 {
		t.Errorf("limit %d, bot ratio %g, bot attempts %d", cfg.PerUserLimit, cfg.BotRatio, cfg.BotAttempts)
	}
	cfg, _, err = parseFlags([]string{"flashsale"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PerUserLimit != 0 || cfg.BotRatio != 0 || cfg.BotAttempts != 20 {
		t.Errorf("defaults: limit %d, bot ratio %g, bot attempts %d; want none, 0, 20", cfg.PerUserLimit, cfg.BotRatio, cfg.BotAttempts)
	}
}

func TestFloodPairFlags(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "tok"} // no webhook secret: the flood pair pays nothing
	cfg, _, err := parseFlags([]string{"flashsale", "--flood-pair", "--flood-x", "5", "--flood-min-rate", "50", "--flood-inflight", "200", "--flood-warmup", "1s", "--duration", "20s"},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.FloodPair || cfg.FloodX != 5 || cfg.FloodMinRate != 50 || cfg.FloodInflight != 200 || cfg.FloodWarmup != time.Second || cfg.Concurrency != 64 || cfg.Duration != 20*time.Second {
		t.Errorf("flood flags: %+v", cfg)
	}
	cfg, _, err = parseFlags([]string{"flashsale"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil || cfg.FloodPair || cfg.FloodX != 10 {
		t.Errorf("a sale without a webhook secret: err %v; defaults flood-pair %v, flood-x %g", err, cfg.FloodPair, cfg.FloodX)
	}
}

func TestStockShardsFlag(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "tok", "PAYMENT_WEBHOOK_SECRET": "hook"}
	cfg, _, err := parseFlags([]string{"flashsale", "-stock-shards", "8"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil || cfg.StockShards != 8 {
		t.Fatalf("-stock-shards 8: %d, %v", cfg.StockShards, err)
	}
	cfg, _, err = parseFlags([]string{"flashsale"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil || cfg.StockShards != 0 {
		t.Fatalf("default: %d shards, %v; want 0 (not sent)", cfg.StockShards, err)
	}
}
