package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Refund sender defaults (REFUND_PROVIDER_TIMEOUT, REFUND_SEND_INTERVAL, REFUND_UNSENT_AFTER).
const (
	DefaultRefundProviderTimeout = 10 * time.Second
	DefaultRefundSendInterval    = 10 * time.Second
	DefaultRefundUnsentAfter     = 15 * time.Minute
)

// Refunds configures the refund sender (the worker's) and the money check of refunds not sent (the
// starter's reconciliation Schedule). The sender runs when ProviderURL is set.
type Refunds struct {
	// ProviderURL is the base URL of the payment provider's refund API (refunds are POSTed to
	// ProviderURL + "/v1/refunds"): https, or http to a loopback address (a local simulator).
	ProviderURL string // REFUND_PROVIDER_URL ("" = refunds are recorded but not sent)
	// ProviderSecret is the HMAC secret the requests are signed with (Refund-Signature).
	ProviderSecret string // REFUND_PROVIDER_SECRET (required with REFUND_PROVIDER_URL)
	// ProviderTimeout bounds one request to the provider.
	ProviderTimeout time.Duration // REFUND_PROVIDER_TIMEOUT (default 10s, 1s to 2m)
	// SendInterval is the sender Schedule's interval: a refund recorded now reaches the provider within about
	// one interval.
	SendInterval time.Duration // REFUND_SEND_INTERVAL (default 10s, at least 1s)
	// UnsentAfter: a refund recorded longer ago and still not sent (nor refused) is a money finding
	// (refund_unsent).
	UnsentAfter time.Duration // REFUND_UNSENT_AFTER (default 15m, at least 1m)
}

// SenderOn reports whether this process sends refunds (REFUND_PROVIDER_URL is set).
func (r Refunds) SenderOn() bool { return r.ProviderURL != "" }

func (c *Config) readRefunds(getenv func(string) string) []error {
	var errs []error
	r := Refunds{ProviderTimeout: DefaultRefundProviderTimeout, SendInterval: DefaultRefundSendInterval,
		UnsentAfter: DefaultRefundUnsentAfter}
	r.ProviderURL = strings.TrimRight(strings.TrimSpace(getenv("REFUND_PROVIDER_URL")), "/")
	r.ProviderSecret = strings.TrimSpace(getenv("REFUND_PROVIDER_SECRET"))
	if r.ProviderURL != "" {
		if err := CheckProviderURL(r.ProviderURL); err != nil {
			errs = append(errs, fmt.Errorf("REFUND_PROVIDER_URL=%q: %w", RedactURL(r.ProviderURL), err))
		}
		if r.ProviderSecret == "" {
			errs = append(errs, fmt.Errorf("REFUND_PROVIDER_SECRET is not set: the HMAC secret the refund requests to REFUND_PROVIDER_URL are signed with"))
		}
	}
	between := func(name string, dst *time.Duration, lo, hi time.Duration, eg string) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || (hi > 0 && d > hi) {
			if hi > 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a Go duration between %s and %s, e.g. %s", name, v, lo, hi, eg))
			} else {
				errs = append(errs, fmt.Errorf("%s=%q: want a Go duration of at least %s, e.g. %s", name, v, lo, eg))
			}
			return
		}
		*dst = d
	}
	between("REFUND_PROVIDER_TIMEOUT", &r.ProviderTimeout, time.Second, 2*time.Minute, "10s")
	between("REFUND_SEND_INTERVAL", &r.SendInterval, time.Second, 0, "10s")
	between("REFUND_UNSENT_AFTER", &r.UnsentAfter, time.Minute, 0, "15m")
	c.Refunds = r
	return errs
}

// CheckProviderURL accepts a refund provider's base URL: https with a host, or http to a loopback address
// (a simulator on this machine); no query or fragment. Money moves over it, so plain http elsewhere is
// refused. Its errors never quote raw (url.Parse's error would, password included).
func CheckProviderURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL: want a base URL such as https://payments.example.com")
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("want a base URL such as https://payments.example.com (no query, fragment or credentials)")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("plain http is only allowed to a loopback address (a local simulator); use https")
	}
	return fmt.Errorf("scheme %q: want https (or http to a loopback address)", u.Scheme)
}

// RedactURL is raw for a message, with its password replaced; "(not a URL)" when raw does not parse (its
// password cannot be told apart then). Credentials in a provider's URL are refused, and never echoed.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(not a URL)"
}
