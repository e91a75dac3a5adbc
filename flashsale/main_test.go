package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
