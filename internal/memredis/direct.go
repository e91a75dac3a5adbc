package memredis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// directConn is the stack's own connection to the embedded Redis: a Write runs every command it completes at
// once, in the writer's goroutine (miniredis's Dispatch, as its server does for a connection), and leaves the
// answers for the next Read. Over a served connection (memPipe and ServeConn) each command of a pipeline
// passes from miniredis's reader goroutine to its dispatcher, and the answer back to the client's: goroutine
// hand-offs that wait their turn behind every runnable HTTP handler when a flood of sold-out requests keeps
// the run queues long, and the sold-out check's shared round trip waits with them (measured in BENCHMARKS.md,
// "What each change bought"). The client end is a memConn, for its reads, deadlines and Close.
//
// It carries what the stack's client sends: RESP arrays of bulk strings, one command after another (a
// command may arrive over several writes). No connection of the stack subscribes or blocks (SUBSCRIBE, BLPOP:
// their answers come later, from another goroutine): such a command is refused with an error.
type directConn struct {
	*memConn // the client's end: Read, deadlines and Close (its out buffer is never written: Write is below)

	srv *server.Server

	mu      sync.Mutex // one Write at a time
	peer    *server.Peer
	pending []byte // the start of a command whose rest has not been written yet
}

// Dialer returns a go-redis Options.Dialer that connects to mr in memory (a directConn each time): no socket,
// and each command runs in the goroutine that sends it. The address and network it is given are ignored.
func Dialer(mr *miniredis.Miniredis) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		return newDirectConn(mr.Server()), nil
	}
}

// newDirectConn returns a connection whose commands srv runs in the writer's goroutine.
func newDirectConn(srv *server.Server) *directConn {
	c := &directConn{memConn: newMemConn(newMemBuffer(), newMemBuffer()), srv: srv}
	c.peer = server.NewPeer(bufio.NewWriter(c.in)) // the answers go where the client end reads
	return c
}

// notRunHere are the commands whose answers a directConn cannot carry: they answer later, or more than once.
var notRunHere = map[string]bool{
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true, "MONITOR": true,
	"BLPOP": true, "BRPOP": true, "BRPOPLPUSH": true, "BLMOVE": true, "BZPOPMIN": true, "BZPOPMAX": true,
	"XREAD": true, "XREADGROUP": true, "WAIT": true,
}

func (c *directConn) Write(p []byte) (int, error) {
	if err := c.usable(c.wd); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.in.ended() {
		return 0, io.ErrClosedPipe
	}
	buf := p
	if len(c.pending) > 0 {
		c.pending = append(c.pending, p...)
		buf = c.pending
	}
	for len(buf) > 0 {
		args, n, err := parseCommand(buf)
		if err != nil {
			c.in.end() // as miniredis closes a connection it cannot read: what was answered is read, then io.EOF
			return 0, fmt.Errorf("embedded redis: %w", err)
		}
		if n == 0 { // incomplete: wait for the rest
			break
		}
		buf = buf[n:]
		if name := strings.ToUpper(args[0]); notRunHere[name] {
			c.peer.WriteError("ERR " + name + " is not run on the stack's direct connection")
		} else {
			c.srv.Dispatch(c.peer, args)
		}
		c.peer.Flush()
		if c.peer.Closed() { // QUIT: its answer is read, then io.EOF
			c.in.end()
			return len(p), nil
		}
	}
	c.pending = append(c.pending[:0], buf...)
	return len(p), nil
}

var errBadCommand = errors.New("not a RESP array of bulk strings")

// parseCommand reads one command (a RESP array of bulk strings) from the start of b: its arguments and the
// bytes it takes, or n 0 when b holds only a part of it.
func parseCommand(b []byte) (args []string, n int, err error) {
	count, i, ok, err := parseHeader(b, 0, '*')
	if err != nil || !ok {
		return nil, 0, err
	}
	if count < 1 {
		return nil, 0, errBadCommand
	}
	args = make([]string, 0, min(count, 64)) // a count is the client's word, not an allocation
	for range count {
		size, j, ok, err := parseHeader(b, i, '$')
		if err != nil || !ok {
			return nil, 0, err
		}
		if size < 0 {
			return nil, 0, errBadCommand
		}
		end := j + size
		if end+2 > len(b) {
			return nil, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, errBadCommand
		}
		args = append(args, string(b[j:end]))
		i = end + 2
	}
	return args, i, nil
}

// parseHeader reads "<kind><integer>\r\n" at b[i:]: the integer and where the next part starts, or ok false
// when b ends before the line does.
func parseHeader(b []byte, i int, kind byte) (v, next int, ok bool, err error) {
	if i >= len(b) {
		return 0, 0, false, nil
	}
	if b[i] != kind {
		return 0, 0, false, errBadCommand
	}
	end := bytes.Index(b[i:], []byte("\r\n"))
	if end < 0 {
		if len(b)-i > 32 { // no count is that long
			return 0, 0, false, errBadCommand
		}
		return 0, 0, false, nil
	}
	v, err = strconv.Atoi(string(b[i+1 : i+end]))
	if err != nil {
		return 0, 0, false, errBadCommand
	}
	return v, i + end + 2, true, nil
}

var _ net.Conn = (*directConn)(nil)
