package devserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/ordersaga/ordersaga/internal/netport"
)

// PortInUseError says that a port the stack wants is taken, and which flag chooses it.
type PortInUseError struct {
	Addr string
	Flag string
	Err  error
}

func (e *PortInUseError) Error() string {
	_, port, _ := net.SplitHostPort(e.Addr)
	return fmt.Sprintf("port %s (%s) is already in use: stop what listens there or choose another port with --%s",
		port, e.Addr, e.Flag)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// CheckPort returns a *PortInUseError when addr cannot be listened on. flag names the command-line flag that
// sets the address, so the message tells the user what to change. Servers that exit the process when their
// listen fails (the UI server does) are only started after this check.
func CheckPort(addr, flag string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return &PortInUseError{Addr: addr, Flag: flag, Err: err}
		}
		return fmt.Errorf("--%s=%s: %w", flag, addr, err)
	}
	return ln.Close()
}

// FreePort returns a port on ip that nothing listens on right now, below the kernel's ephemeral range so that
// no outgoing connection takes it before the server binds it (netport.Free); another process may still.
func FreePort(ip string) (int, error) { return netport.Free(ip) }

// HostPort joins an IP and a port.
func HostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }
