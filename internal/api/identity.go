package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Identity says who calls the order API: the user a gateway in front of it authenticated. With one configured
// (CALLER_IDENTITY), a caller places orders only for itself and reads and cancels only its own orders; without
// one the API trusts the body's user_id and any order ID, and must sit behind a gateway that enforces that.
type Identity interface {
	// Caller returns the user ID the request is made by, or an error saying why it names none.
	Caller(r *http.Request) (string, error)
}

// HeaderIdentity trusts a header that the gateway sets after it authenticated the caller (it must drop the
// header from what clients send).
type HeaderIdentity struct{ Header string }

// Caller is the header's value, which must be a valid user ID and come once: a gateway that appends its
// authenticated value to the one the client sent, instead of replacing it, would let the client choose the user.
func (h HeaderIdentity) Caller(r *http.Request) (string, error) {
	v, err := onlyValue(r, h.Header)
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", fmt.Errorf("the %s header is missing", h.Header)
	}
	if !ordersaga.ValidName(v) {
		return "", fmt.Errorf("the %s header is not a valid user ID", h.Header)
	}
	return v, nil
}

// BearerIdentity verifies `Authorization: Bearer <JWT>` signed with HS256 and the shared secret: the token's
// `sub` is the user ID; `exp` is required and `nbf`, when present, is honoured (30 s of clock skew either way).
type BearerIdentity struct {
	Secret []byte
	Now    func() time.Time // nil: time.Now
}

// tokenSkew is the clock skew allowed on exp and nbf.
const tokenSkew = 30 * time.Second

// Caller verifies the bearer token and returns its subject.
func (b BearerIdentity) Caller(r *http.Request) (string, error) {
	auth, err := onlyValue(r, "Authorization")
	if err != nil {
		return "", err
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return "", errors.New("an Authorization: Bearer token is required")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("the bearer token is not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "HS256" {
		return "", errors.New("the bearer token is not signed with HS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", errors.New("the bearer token's signature is not base64url")
	}
	mac := hmac.New(sha256.New, b.Secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return "", errors.New("the bearer token's signature is wrong")
	}
	var claims struct {
		Sub string   `json:"sub"`
		Exp *float64 `json:"exp"`
		Nbf *float64 `json:"nbf"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", errors.New("the bearer token's claims are not JSON")
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	switch {
	case claims.Exp == nil:
		return "", errors.New("the bearer token has no exp")
	case now.After(time.Unix(int64(*claims.Exp), 0).Add(tokenSkew)):
		return "", errors.New("the bearer token has expired")
	case claims.Nbf != nil && now.Add(tokenSkew).Before(time.Unix(int64(*claims.Nbf), 0)):
		return "", errors.New("the bearer token is not valid yet")
	case !ordersaga.ValidName(claims.Sub):
		return "", errors.New("the bearer token's sub is not a valid user ID")
	}
	return claims.Sub, nil
}

// onlyValue is the value of a header that names the caller, refused when the request carries it more than once
// ("" when it carries none).
func onlyValue(r *http.Request, header string) (string, error) {
	vs := r.Header.Values(header)
	if len(vs) > 1 {
		return "", fmt.Errorf("the %s header is sent %d times: it names the caller once (a gateway must replace the client's, not append to it)", header, len(vs))
	}
	if len(vs) == 0 {
		return "", nil
	}
	return vs[0], nil
}

func decodeSegment(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// ParseIdentity builds the Identity of CALLER_IDENTITY: "" (none), "header:<Header-Name>" (a trusted gateway
// header) or "bearer-hs256" (a JWT verified with secret, CALLER_TOKEN_SECRET, at least 32 bytes).
func ParseIdentity(spec, secret string) (Identity, error) {
	switch {
	case spec == "":
		if secret != "" {
			return nil, errors.New("CALLER_TOKEN_SECRET is set but CALLER_IDENTITY is not bearer-hs256")
		}
		return nil, nil
	case strings.HasPrefix(spec, "header:"):
		name := http.CanonicalHeaderKey(strings.TrimSpace(strings.TrimPrefix(spec, "header:")))
		if name == "" || strings.ContainsAny(name, " \t:") {
			return nil, fmt.Errorf("CALLER_IDENTITY=%q: want header:<Header-Name>, e.g. header:X-User-Id", spec)
		}
		if name == "Authorization" || name == "Idempotency-Key" || name == "Payment-Signature" {
			return nil, fmt.Errorf("CALLER_IDENTITY=%q: %s has another meaning in this API", spec, name)
		}
		return HeaderIdentity{Header: name}, nil
	case spec == "bearer-hs256":
		if len(secret) < 32 {
			return nil, errors.New("CALLER_TOKEN_SECRET: bearer-hs256 needs a secret of at least 32 bytes")
		}
		return BearerIdentity{Secret: []byte(secret)}, nil
	}
	return nil, fmt.Errorf("CALLER_IDENTITY=%q: want empty, header:<Header-Name> or bearer-hs256", spec)
}

// caller answers the request's caller when an Identity is configured: ok is false when the request was
// answered 401 (no caller, or a bad one); user is "" when no Identity is configured (anyone may ask).
func (s *server) caller(w http.ResponseWriter, r *http.Request) (user string, ok bool) {
	if s.Identity == nil {
		return "", true
	}
	user, err := s.Identity.Caller(r)
	if err != nil {
		writeProblem(w, newProblem(kindUnauthenticated, err.Error()))
		return "", false
	}
	return user, true
}
