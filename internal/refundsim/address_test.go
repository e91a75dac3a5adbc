package refundsim_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// TestDefaultAddrIsDefaultPort ties the two spellings of the simulator's default place: the local stack's
// port flag and `paysim serve`'s address must name the same port.
func TestDefaultAddrIsDefaultPort(t *testing.T) {
	t.Parallel()
	host, port, err := net.SplitHostPort(refundsim.DefaultAddr)
	if err != nil || host != "127.0.0.1" || port != strconv.Itoa(refundsim.DefaultPort) {
		t.Errorf("DefaultAddr %q: host %q port %q (%v); want 127.0.0.1 and DefaultPort %d", refundsim.DefaultAddr, host, port, err, refundsim.DefaultPort)
	}
}
