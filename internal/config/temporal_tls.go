package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// readTemporalSecurity reads the Temporal client's TLS, mTLS and API-key settings and loads the files they
// name, so a wrong file stops the start with the variable named.
func (c *Config) readTemporalSecurity(getenv func(string) string) []error {
	var errs []error
	get := func(name string, dst *string) {
		*dst = strings.TrimSpace(getenv(name))
	}
	get("TEMPORAL_TLS_CA", &c.TemporalTLSCA)
	get("TEMPORAL_TLS_CERT", &c.TemporalTLSCert)
	get("TEMPORAL_TLS_KEY", &c.TemporalTLSKey)
	get("TEMPORAL_TLS_SERVER_NAME", &c.TemporalTLSServerName)
	get("TEMPORAL_API_KEY", &c.TemporalAPIKey)

	// Every other setting implies TLS; an explicit TEMPORAL_TLS=false beside one of them is a contradiction
	// (an API key would cross the network in plaintext).
	var implied []string
	for _, s := range []struct{ name, v string }{
		{"TEMPORAL_TLS_CA", c.TemporalTLSCA}, {"TEMPORAL_TLS_CERT", c.TemporalTLSCert},
		{"TEMPORAL_TLS_KEY", c.TemporalTLSKey}, {"TEMPORAL_TLS_SERVER_NAME", c.TemporalTLSServerName},
		{"TEMPORAL_API_KEY", c.TemporalAPIKey},
	} {
		if s.v != "" {
			implied = append(implied, s.name)
		}
	}
	c.TemporalTLS = len(implied) > 0
	if v := strings.TrimSpace(getenv("TEMPORAL_TLS")); v != "" {
		b, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS=%q: want true or false", v))
		case !b && len(implied) > 0:
			errs = append(errs, fmt.Errorf("TEMPORAL_TLS=%q: TLS is off but %s set, which need it", v, strings.Join(implied, ", ")))
		default:
			c.TemporalTLS = b
		}
	}
	if (c.TemporalTLSCert == "") != (c.TemporalTLSKey == "") {
		errs = append(errs, errors.New("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY: set both (the client certificate and its key) or neither"))
	}
	if len(errs) == 0 {
		if _, err := c.TemporalTLSConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// TemporalTLSConfig is the TLS configuration of the Temporal client (nil: plaintext): the CA of
// TEMPORAL_TLS_CA (else the system's), the client certificate of TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY,
// and TEMPORAL_TLS_SERVER_NAME. Files are read at each call, that is at start: a rotated certificate takes a
// restart.
func (c Config) TemporalTLSConfig() (*tls.Config, error) {
	if !c.TemporalTLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TemporalTLSServerName}
	if c.TemporalTLSCA != "" {
		pool, err := readCAFile("TEMPORAL_TLS_CA", c.TemporalTLSCA)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if c.TemporalTLSCert != "" || c.TemporalTLSKey != "" {
		cert, err := tls.LoadX509KeyPair(c.TemporalTLSCert, c.TemporalTLSKey)
		if err != nil {
			return nil, fmt.Errorf("TEMPORAL_TLS_CERT=%s, TEMPORAL_TLS_KEY=%s: %w", c.TemporalTLSCert, c.TemporalTLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
