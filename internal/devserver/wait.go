package devserver

import (
	"context"
	"fmt"
	"net"
	"time"
)

// waitTCP waits until addr accepts a TCP connection.
func waitTCP(ctx context.Context, addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not accept connections: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
