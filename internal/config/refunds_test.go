package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
)

func TestFromEnv_Refunds(t *testing.T) {
	t.Parallel()
	off, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if off.Refunds.SenderOn() {
		t.Errorf("the sender is on with no REFUND_PROVIDER_URL: %+v", off.Refunds)
	}
	if off.Refunds.ProviderTimeout != config.DefaultRefundProviderTimeout || off.Refunds.SendInterval != config.DefaultRefundSendInterval ||
		off.Refunds.UnsentAfter != config.DefaultRefundUnsentAfter {
		t.Errorf("defaults: %+v", off.Refunds)
	}

	on, err := config.FromEnv(env(map[string]string{
		"REFUND_PROVIDER_URL": "https://pay.example.com/api/", "REFUND_PROVIDER_SECRET": "s3cret",
		"REFUND_PROVIDER_TIMEOUT": "3s", "REFUND_SEND_INTERVAL": "2s", "REFUND_UNSENT_AFTER": "5m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Refunds{ProviderURL: "https://pay.example.com/api", ProviderSecret: "s3cret",
		ProviderTimeout: 3 * time.Second, SendInterval: 2 * time.Second, UnsentAfter: 5 * time.Minute}
	if on.Refunds != want || !on.Refunds.SenderOn() {
		t.Errorf("got %+v, want %+v", on.Refunds, want)
	}
	for _, loop := range []string{"http://127.0.0.1:8091", "http://localhost:8091", "http://[::1]:8091"} {
		if _, err := config.FromEnv(env(map[string]string{"REFUND_PROVIDER_URL": loop, "REFUND_PROVIDER_SECRET": "s"})); err != nil {
			t.Errorf("%s (a local simulator) refused: %v", loop, err)
		}
	}
}

func TestFromEnv_RefundErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		env  map[string]string
		want string
	}{
		"url without secret":    {map[string]string{"REFUND_PROVIDER_URL": "https://pay.example.com"}, "REFUND_PROVIDER_SECRET"},
		"plain http elsewhere":  {map[string]string{"REFUND_PROVIDER_URL": "http://pay.example.com", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"no scheme":             {map[string]string{"REFUND_PROVIDER_URL": "pay.example.com", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"ftp":                   {map[string]string{"REFUND_PROVIDER_URL": "ftp://pay.example.com", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"query":                 {map[string]string{"REFUND_PROVIDER_URL": "https://pay.example.com?a=1", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"credentials":           {map[string]string{"REFUND_PROVIDER_URL": "https://u:s3cret@pay.example.com", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"credentials, bad port": {map[string]string{"REFUND_PROVIDER_URL": "https://u:s3cret@host:bad", "REFUND_PROVIDER_SECRET": "s"}, "REFUND_PROVIDER_URL"},
		"timeout zero":          {map[string]string{"REFUND_PROVIDER_TIMEOUT": "0s"}, "REFUND_PROVIDER_TIMEOUT"},
		"timeout too long":      {map[string]string{"REFUND_PROVIDER_TIMEOUT": "10m"}, "REFUND_PROVIDER_TIMEOUT"},
		"interval not a time":   {map[string]string{"REFUND_SEND_INTERVAL": "often"}, "REFUND_SEND_INTERVAL"},
		"interval too short":    {map[string]string{"REFUND_SEND_INTERVAL": "100ms"}, "REFUND_SEND_INTERVAL"},
		"unsent after short":    {map[string]string{"REFUND_UNSENT_AFTER": "10s"}, "REFUND_UNSENT_AFTER"},
	}
	for name, tc := range tests {
		_, err := config.FromEnv(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
}
