package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the request header that carries the signature.
const Header = "Payment-Signature"

// Tolerance is how far the signature's timestamp may be from the receiver's clock, either way.
const Tolerance = 300 * time.Second

// Why a signature was refused. Every one of them is a 401 with nothing recorded.
var (
	ErrMissing   = errors.New("signature header missing")
	ErrMalformed = errors.New("signature header malformed")
	ErrStale     = errors.New("signature timestamp outside the tolerance")
	ErrMismatch  = errors.New("no signature matches")
)

// Compute returns the hex v1 signature of body at timestamp t.
func Compute(secret string, t int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(t, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Sign returns the header value for body signed at t, with one v1 per secret (a sender that rotates its key
// signs with the old and the new one).
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := t.Unix()
	parts := []string{"t=" + strconv.FormatInt(ts, 10)}
	for _, s := range secrets {
		parts = append(parts, "v1="+Compute(s, ts, body))
	}
	return strings.Join(parts, ",")
}

// Verify checks a header value against the body: its timestamp within tolerance of now, and one of its v1
// signatures made with one of the secrets. Comparisons are constant-time. Unknown schemes (v0=…) are ignored.
func Verify(header string, body []byte, secrets []string, now time.Time, tolerance time.Duration) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrMissing
	}
	var (
		ts     int64
		haveTS bool
		sigs   [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			if haveTS {
				return fmt.Errorf("%w: two timestamps", ErrMalformed)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("%w: t=%q is not unix seconds", ErrMalformed, v)
			}
			ts, haveTS = n, true
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return fmt.Errorf("%w: v1 is not a hex HMAC-SHA256", ErrMalformed)
			}
			sigs = append(sigs, sig)
		}
	}
	if !haveTS || len(sigs) == 0 {
		return fmt.Errorf("%w: want t=<unix seconds>,v1=<hex>", ErrMalformed)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now", ErrStale, time.Unix(ts, 0).UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	matched := false
	for _, secret := range secrets {
		want, _ := hex.DecodeString(Compute(secret, ts, body))
		for _, sig := range sigs {
			// No early exit: the time taken does not tell which secret or signature matched.
			if hmac.Equal(want, sig) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrMismatch
	}
	return nil
}
