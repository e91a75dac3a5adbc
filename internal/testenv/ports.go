package testenv

import (
	"testing"

	"github.com/ordersaga/ordersaga/internal/netport"
)

// StablePort returns a port on ip that nothing listens on and that the kernel never hands out as the source
// port of an outgoing connection (it lies below the ephemeral range). A test that stops a server and starts
// it again on the same port needs one: a port from the ephemeral range can be taken in between by any
// connection on the machine (a database pool's, a client's), and the restart then fails with "address
// already in use". Each call returns a port no earlier call of this process returned.
func StablePort(tb testing.TB, ip string) int {
	tb.Helper()
	port, err := netport.Free(ip)
	if err != nil {
		tb.Fatal(err)
	}
	return port
}
