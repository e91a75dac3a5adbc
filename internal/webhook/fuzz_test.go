package webhook

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: the signature parser on any header and body. It never panics; it accepts a header only when one
// of its v1 values is the body's HMAC with the secret (hex in either case: the fuzzer's first find was an
// upper-case signature, the same bytes) at its timestamp within the tolerance (a forged, stale or
// re-signed-with-another-key header is refused with one of the four reasons); a header that Sign made for the
// body verifies, and the same header on another body does not.
func FuzzVerify(f *testing.F) {
	const secret, other = "whsec-fuzz-current", "whsec-fuzz-other"
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event_id":"e","order_id":"o","amount_cents":1,"currency":"CNY","status":"succeeded"}`)
	for _, h := range []string{
		Sign(now, body, secret),
		Sign(now, body, other, secret),
		Sign(now.Add(-Tolerance-time.Second), body, secret),
		Sign(now, body, other),
		"t=1800000000", "v1=00", "t=,v1=", "t=1,t=2,v1=" + Compute(secret, 1, body), "t=-5,v1=ab",
		"t=1800000000,v1=zz", "t=1800000000 , v1=" + Compute(secret, 1_800_000_000, body), "", ",,,", "v0=abc,t=1800000000",
		"t=99999999999999999999,v1=" + Compute(secret, 1_800_000_000, body),
	} {
		f.Add(h, body)
	}
	f.Fuzz(func(t *testing.T, header string, b []byte) {
		err := Verify(header, b, []string{secret}, now, Tolerance)
		if err != nil {
			if !errors.Is(err, ErrMissing) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrStale) && !errors.Is(err, ErrMismatch) {
				t.Fatalf("Verify(%q): %v is none of the four reasons", header, err)
			}
		} else if !containsSignature(header, b, secret, now) {
			t.Fatalf("Verify(%q) accepted a header without the body's signature", header)
		}
		signed := Sign(now, b, secret)
		if err := Verify(signed, b, []string{secret}, now, Tolerance); err != nil {
			t.Fatalf("Sign's own header refused: %v", err)
		}
		if err := Verify(signed, b, []string{other}, now, Tolerance); !errors.Is(err, ErrMismatch) {
			t.Fatalf("a header signed with another key: %v, want a mismatch", err)
		}
		tampered := append(bytes.Clone(b), 'x')
		if err := Verify(signed, tampered, []string{secret}, now, Tolerance); !errors.Is(err, ErrMismatch) {
			t.Fatalf("the header on another body: %v, want a mismatch", err)
		}
	})
}

// containsSignature reports whether header has a v1 that is the body's signature (hex in either case) at its
// own timestamp, within the tolerance of now.
func containsSignature(header string, body []byte, secret string, now time.Time) bool {
	var ts int64
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return false
	}
	want, _ := hex.DecodeString(Compute(secret, ts, body))
	for _, sig := range sigs {
		if bytes.Equal(sig, want) {
			return true
		}
	}
	return false
}
