package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// StablePort returns a port on ip that nothing listens on and that the kernel never hands out as the source
// port of an outgoing connection (it lies below the ephemeral range). A test that stops a server and starts
// it again on the same port needs one: a port from the ephemeral range can be taken in between by any
// connection on the machine (a database pool's, a client's), and the restart then fails with "address
// already in use". Each call returns a port no earlier call of this process returned.
func StablePort(tb testing.TB, ip string) int {
	tb.Helper()
	low := ephemeralLow()
	const floor = 10000
	if low <= floor+1000 {
		tb.Fatalf("the ephemeral port range starts at %d: no room below it for a test port", low)
	}
	for range 200 {
		port := floor + rand.IntN(low-floor)
		if !claim(port) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return port
	}
	tb.Fatalf("no free port on %s between %d and %d", ip, floor, low)
	return 0
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

func claim(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if handedOut[port] {
		return false
	}
	handedOut[port] = true
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux), 32768 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err == nil && lo > 0 {
			return lo
		}
	}
	return 32768
}
