package netport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Free returns a port on ip that nothing listens on and that the kernel never hands out as the source port
// of an outgoing connection (it lies below the ephemeral range), and that no earlier call of this process
// returned. A port from the ephemeral range (":0") can be taken between its pick and its use by any
// connection on the machine (a database pool's, a client's); a server that binds it then fails with "address
// already in use" (the in-process Temporal server exits on that). Another process may still take the port.
func Free(ip string) (int, error) {
	low := ephemeralLow()
	const floor = 10000
	if low <= floor+1000 {
		return 0, fmt.Errorf("free port on %s: the ephemeral port range starts at %d, no room below it", ip, low)
	}
	var last error
	for range 200 {
		port := floor + rand.IntN(low-floor)
		if !claim(port) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		_ = ln.Close()
		return port, nil
	}
	return 0, fmt.Errorf("free port on %s: none between %d and %d (last: %v)", ip, floor, low, last)
}

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

func claim(port int) bool {
	mu.Lock()
	defer mu.Unlock()
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
