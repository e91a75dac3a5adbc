package config

import (
	"crypto/x509"
	"fmt"
	"os"
)

// readCAFile reads the PEM file of CA certificates that the variable names into a pool: the roots a TLS
// client checks its server's certificate against. A missing file or one without a certificate is an error
// naming the variable.
func readCAFile(variable, path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", variable, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s=%s: no PEM certificate in the file", variable, path)
	}
	return pool, nil
}
