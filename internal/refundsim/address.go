package refundsim

// Where the simulator is when nothing says otherwise: `paysim serve` listens there, the local stack serves its
// in-process simulator there (--provider-port), and `paysim refunds` and the flash-sale tool read its report
// there.
const (
	// DefaultPort is the simulator's port on the loopback address.
	DefaultPort = 8091
	// DefaultAddr is the simulator's listening address: the loopback address and DefaultPort.
	DefaultAddr = "127.0.0.1:8091"
	// DefaultURL is the simulator's base URL (a REFUND_PROVIDER_URL).
	DefaultURL = "http://" + DefaultAddr
)
