package webhook_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/webhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event_id":"evt-1","order_id":"o-1","amount_cents":1998,"currency":"CNY","status":"succeeded"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := webhook.Compute("s3cret", now.Unix(), body)
	secrets := []string{"new-secret", "s3cret"}
	tests := []struct {
		name   string
		header string
		body   []byte
		want   error
	}{
		{"valid", "t=" + ts + ",v1=" + sig, body, nil},
		{"valid_with_spaces", " t=" + ts + ", v1=" + sig + " ", body, nil},
		{"valid_among_several_v1", "t=" + ts + ",v1=" + webhook.Compute("other", now.Unix(), body) + ",v1=" + sig, body, nil},
		{"unknown_scheme_ignored", "t=" + ts + ",v0=abc,v1=" + sig, body, nil},
		{"signed_by_sign", webhook.Sign(now, body, "retired", "s3cret"), body, nil},
		{"edge_of_tolerance_past", webhook.Sign(now.Add(-300*time.Second), body, "s3cret"), body, nil},
		{"edge_of_tolerance_future", webhook.Sign(now.Add(300*time.Second), body, "s3cret"), body, nil},
		{"missing", "", body, webhook.ErrMissing},
		{"blank", "   ", body, webhook.ErrMissing},
		{"no_v1", "t=" + ts, body, webhook.ErrMalformed},
		{"no_t", "v1=" + sig, body, webhook.ErrMalformed},
		{"empty_value", "t=" + ts + ",v1=", body, webhook.ErrMalformed},
		{"no_equals", "t=" + ts + ",v1" + sig, body, webhook.ErrMalformed},
		{"t_not_a_number", "t=1e9,v1=" + sig, body, webhook.ErrMalformed},
		{"t_negative", "t=-5,v1=" + sig, body, webhook.ErrMalformed},
		{"two_t", "t=" + ts + ",t=" + ts + ",v1=" + sig, body, webhook.ErrMalformed},
		{"v1_not_hex", "t=" + ts + ",v1=" + sig[:62] + "zz", body, webhook.ErrMalformed},
		{"v1_wrong_length", "t=" + ts + ",v1=" + sig + "00", body, webhook.ErrMalformed},
		{"stale", webhook.Sign(now.Add(-301*time.Second), body, "s3cret"), body, webhook.ErrStale},
		{"future", webhook.Sign(now.Add(301*time.Second), body, "s3cret"), body, webhook.ErrStale},
		{"wrong_secret", webhook.Sign(now, body, "guess"), body, webhook.ErrMismatch},
		{"body_changed", "t=" + ts + ",v1=" + sig, append([]byte(nil), append(body, ' ')...), webhook.ErrMismatch},
		{"timestamp_changed", "t=" + strconv.FormatInt(now.Unix()-1, 10) + ",v1=" + sig, body, webhook.ErrMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := webhook.Verify(tc.header, tc.body, secrets, now, webhook.Tolerance)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Verify(%q) = %v, want %v", tc.header, err, tc.want)
			}
		})
	}
}

func TestVerify_NoSecretsRefusesEverything(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body := []byte(`{}`)
	if err := webhook.Verify(webhook.Sign(now, body, ""), body, nil, now, webhook.Tolerance); !errors.Is(err, webhook.ErrMismatch) {
		t.Errorf("Verify without secrets = %v, want ErrMismatch", err)
	}
}
