package netport

import (
	"net"
	"strconv"
	"testing"
)

// Free hands out listenable ports below the ephemeral range, never the same one twice.
func TestFree(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := Free("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= low {
			t.Fatalf("port %d outside [10000, %d)", p, low)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}
