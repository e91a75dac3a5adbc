package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority of a test's own, which issues server and client certificates.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	PEMPath string // the CA certificate as a PEM file
	dir     string
}

// NewCA makes a CA whose PEM file lives in the test's temp dir.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := mustKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, dir: tb.TempDir()}
	ca.PEMPath = writePEM(tb, filepath.Join(ca.dir, name+"-ca.pem"), "CERTIFICATE", der)
	return ca
}

// Issued is a certificate the CA issued, in memory and as PEM files.
type Issued struct {
	TLS      tls.Certificate
	CertPath string
	KeyPath  string
}

// Server issues a server certificate for the DNS names and 127.0.0.1.
func (ca *CA) Server(tb testing.TB, names ...string) Issued {
	tb.Helper()
	return ca.issue(tb, "server", x509.ExtKeyUsageServerAuth, names)
}

// Client issues a client certificate (mTLS) with the common name.
func (ca *CA) Client(tb testing.TB, name string) Issued {
	tb.Helper()
	return ca.issue(tb, name, x509.ExtKeyUsageClientAuth, nil)
}

func (ca *CA) issue(tb testing.TB, cn string, usage x509.ExtKeyUsage, names []string) Issued {
	tb.Helper()
	key := mustKey(tb)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     names,
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	base := filepath.Join(ca.dir, cn+"-"+serial.String())
	is := Issued{
		CertPath: writePEM(tb, base+".pem", "CERTIFICATE", der),
		KeyPath:  writePEM(tb, base+"-key.pem", "EC PRIVATE KEY", kder),
	}
	if is.TLS, err = tls.LoadX509KeyPair(is.CertPath, is.KeyPath); err != nil {
		tb.Fatal(err)
	}
	return is
}

// Pool is a cert pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func mustKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func writePEM(tb testing.TB, path, typ string, der []byte) string {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
