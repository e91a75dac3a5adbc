package testenv_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestClosedAddr_RefusesAndKeepsItsPort: a connection to ClosedAddr is refused at once, and nothing else can
// listen on its port while the test runs (another test's server would answer in its place).
func TestClosedAddr_RefusesAndKeepsItsPort(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("a connection to %s was accepted", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > time.Second {
		t.Errorf("dial %s: %v after %s, want connection refused at once", addr, err, time.Since(start))
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("another listener took %s", addr)
	}
}
