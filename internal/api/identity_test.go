package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
)

const tokenSecret = "caller-token-secret-of-32-bytes-at-least"

// jwt signs claims with HS256 (alg as given) and secret.
func jwt(alg, secret string, claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": alg, "typ": "JWT"}) + "." + enc(claims)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head))
	return head + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// TestParseIdentity: CALLER_IDENTITY and CALLER_TOKEN_SECRET; every bad value is refused naming its variable.
func TestParseIdentity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, secret string
		want         any    // the Identity's type, nil for none
		err          string // a part of the error
	}{
		{"", "", nil, ""},
		{"header:X-User-Id", "", api.HeaderIdentity{Header: "X-User-Id"}, ""},
		{"header: x-user-id ", "", api.HeaderIdentity{Header: "X-User-Id"}, ""},
		{"bearer-hs256", tokenSecret, api.BearerIdentity{}, ""},
		{"header:", "", nil, "CALLER_IDENTITY"},
		{"header:X User", "", nil, "CALLER_IDENTITY"},
		{"header:Authorization", "", nil, "CALLER_IDENTITY"},
		{"bearer-hs256", "short", nil, "CALLER_TOKEN_SECRET"},
		{"bearer-hs256", "", nil, "CALLER_TOKEN_SECRET"},
		{"jwt", "", nil, "CALLER_IDENTITY"},
		{"", tokenSecret, nil, "CALLER_TOKEN_SECRET"},
	} {
		id, err := api.ParseIdentity(c.spec, c.secret)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseIdentity(%q, %q) = %v, %v; want an error naming %s", c.spec, c.secret, id, err, c.err)
			}
		case err != nil:
			t.Errorf("ParseIdentity(%q): %v", c.spec, err)
		case c.want == nil && id != nil:
			t.Errorf("ParseIdentity(%q) = %#v, want none", c.spec, id)
		case c.want != nil:
			if h, ok := c.want.(api.HeaderIdentity); ok && id != h {
				t.Errorf("ParseIdentity(%q) = %#v, want %#v", c.spec, id, h)
			}
			if _, ok := c.want.(api.BearerIdentity); ok {
				if _, is := id.(api.BearerIdentity); !is {
					t.Errorf("ParseIdentity(%q) = %#v, want a BearerIdentity", c.spec, id)
				}
			}
		}
	}
}

// TestBearerIdentity: a token is the caller only when signed with the secret in HS256, not expired, valid
// already, and its sub a user ID.
func TestBearerIdentity(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	b := api.BearerIdentity{Secret: []byte(tokenSecret), Now: func() time.Time { return now }}
	exp := now.Add(time.Hour).Unix()
	for _, c := range []struct {
		name, auth, want string
	}{
		{"valid", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1", "exp": exp}), "u-1"},
		{"valid with nbf", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1", "exp": exp, "nbf": now.Unix()}), "u-1"},
		{"expired within the skew", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1", "exp": now.Add(-10 * time.Second).Unix()}), "u-1"},
		{"no header", "", ""},
		{"not bearer", "Basic dTpw", ""},
		{"not a jwt", "Bearer abc", ""},
		{"another secret", "Bearer " + jwt("HS256", "another-secret-another-secret-another", map[string]any{"sub": "u-1", "exp": exp}), ""},
		{"alg none", "Bearer " + strings.TrimSuffix(jwt("none", tokenSecret, map[string]any{"sub": "u-1", "exp": exp}), "x"), ""},
		{"expired", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1", "exp": now.Add(-time.Minute).Unix()}), ""},
		{"no exp", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1"}), ""},
		{"not yet valid", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-1", "exp": exp, "nbf": now.Add(time.Minute).Unix()}), ""},
		{"bad sub", "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u 1", "exp": exp}), ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		got, err := b.Caller(r)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%s: caller %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// TestCallerIdentity_OwnOrdersOnly: with a caller identity (a gateway's header), a caller places orders for
// itself only (403 naming user_id otherwise, 401 without a caller), and reads and cancels only its own orders:
// another user's order is 404, and that user's cancel changes nothing.
func TestCallerIdentity_OwnOrdersOnly(t *testing.T) {
	t.Parallel()
	e := newAPI(t, func(d *api.Deps) { d.Identity = api.HeaderIdentity{Header: "X-User-Id"} })
	e.Stock(t, "ID-1", 10, 100)
	as := func(user string, h map[string]string) map[string]string {
		out := map[string]string{"X-User-Id": user}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	body := []byte(orderBody("u-a", ordersaga.Line{SKU: "ID-1", Qty: 1}))
	e.do(http.MethodPost, "/v1/orders", body, map[string]string{"Idempotency-Key": "id-0"}).wantProblem(t, http.StatusUnauthorized, "unauthenticated")
	p := e.do(http.MethodPost, "/v1/orders", body, as("u-b", map[string]string{"Idempotency-Key": "id-1"})).wantProblem(t, http.StatusForbidden, "forbidden")
	if p.Field != "user_id" {
		t.Errorf("403 names field %q, want user_id", p.Field)
	}
	placed := e.do(http.MethodPost, "/v1/orders", body, as("u-a", map[string]string{"Idempotency-Key": "id-2"}))
	if placed.status != http.StatusCreated {
		t.Fatalf("own order: %s, want 201", placed)
	}
	id := placed.order(t).OrderID

	e.do(http.MethodGet, "/v1/orders/"+id, nil, nil).wantProblem(t, http.StatusUnauthorized, "unauthenticated")
	e.do(http.MethodGet, "/v1/orders/"+id, nil, as("u-b", nil)).wantProblem(t, http.StatusNotFound, "order-not-found")
	if r := e.do(http.MethodGet, "/v1/orders/"+id, nil, as("u-a", nil)); r.status != http.StatusOK {
		t.Errorf("own order read: %s, want 200", r)
	}
	e.do(http.MethodPost, "/v1/orders/"+id+"/cancel", nil, as("u-b", nil)).wantProblem(t, http.StatusNotFound, "order-not-found")
	if o := e.do(http.MethodGet, "/v1/orders/"+id, nil, as("u-a", nil)).order(t); o.Status != ordersaga.StatusAwaitingPayment {
		t.Errorf("after another user's cancel: %s, want AWAITING_PAYMENT", o.Status)
	}
	if r := e.do(http.MethodPost, "/v1/orders/"+id+"/cancel", nil, as("u-a", nil)); r.status != http.StatusOK || r.order(t).Status != ordersaga.StatusCancelled {
		t.Errorf("own cancel: %s, want 200 CANCELLED", r)
	}
}

// TestCallerIdentity_HeaderSentTwice: a request that carries the identity header more than once (a gateway
// that appends its authenticated value to the client's instead of replacing it) is refused 401, naming the
// header, and nothing is placed: served as the first value, the client would choose the user. The same for a
// second Authorization header with bearer-hs256.
func TestCallerIdentity_HeaderSentTwice(t *testing.T) {
	t.Parallel()
	e := newAPI(t, func(d *api.Deps) { d.Identity = api.HeaderIdentity{Header: "X-User-Id"} })
	e.Stock(t, "ID-2", 10, 100)
	for i, c := range []struct {
		name   string
		values []string
	}{
		{"client's then gateway's", []string{"u-b", "u-a"}},
		{"twice the same", []string{"u-a", "u-a"}},
		{"folded into one line", []string{"u-b, u-a"}},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/orders",
			strings.NewReader(orderBody("u-b", ordersaga.Line{SKU: "ID-2", Qty: 1})))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("twice-%d", i))
		for _, v := range c.values {
			req.Header.Add("X-User-Id", v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r := response{status: res.StatusCode, header: res.Header, body: b}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s: %s, want 401", c.name, r)
			continue
		}
		if p := r.problem(t); !strings.Contains(p.Detail, "X-User-Id") {
			t.Errorf("%s: problem %+v does not name the X-User-Id header", c.name, p)
		}
	}
	if n := e.CountRows(t, "orders", "user_id IN (?, ?)", "u-a", "u-b"); n != 0 {
		t.Errorf("%d orders recorded after refused requests, want 0", n)
	}

	b := api.BearerIdentity{Secret: []byte(tokenSecret)}
	token := "Bearer " + jwt("HS256", tokenSecret, map[string]any{"sub": "u-a", "exp": time.Now().Add(time.Hour).Unix()})
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Add("Authorization", token)
	r.Header.Add("Authorization", token)
	if got, err := b.Caller(r); err == nil || !strings.Contains(err.Error(), "Authorization") {
		t.Errorf("two Authorization headers: caller %q, %v; want an error naming Authorization", got, err)
	}
}

// TestCallerIdentity_BearerToken: the order API with bearer-hs256 places the token's user's order and refuses
// a token signed with another secret.
func TestCallerIdentity_BearerToken(t *testing.T) {
	t.Parallel()
	id, err := api.ParseIdentity("bearer-hs256", tokenSecret)
	if err != nil {
		t.Fatal(err)
	}
	e := newAPI(t, func(d *api.Deps) { d.Identity = id })
	e.Stock(t, "ID-2", 10, 100)
	body := []byte(orderBody("u-tok", ordersaga.Line{SKU: "ID-2", Qty: 1}))
	exp := time.Now().Add(time.Hour).Unix()
	bad := jwt("HS256", "another-secret-another-secret-another", map[string]any{"sub": "u-tok", "exp": exp})
	e.do(http.MethodPost, "/v1/orders", body, map[string]string{"Idempotency-Key": "tok-1", "Authorization": "Bearer " + bad}).
		wantProblem(t, http.StatusUnauthorized, "unauthenticated")
	good := jwt("HS256", tokenSecret, map[string]any{"sub": "u-tok", "exp": exp})
	if r := e.do(http.MethodPost, "/v1/orders", body, map[string]string{"Idempotency-Key": "tok-1", "Authorization": "Bearer " + good}); r.status != http.StatusCreated {
		t.Errorf("with the user's token: %s, want 201", r)
	}
}
