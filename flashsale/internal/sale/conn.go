package sale

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// connPool speaks HTTP/1.1 to a plain http:// target over keep-alive connections of its own, each exchange
// in its caller's goroutine: write the request, read the answer. Go's http.Transport hands each exchange to a
// writer and a reader goroutine of the connection and back (three wake-ups a request), and a profile of the
// tool at 15,000 requests/s put that client at 60 % of the tool's CPU, taken from the machine the stack
// shares with it (BENCHMARKS.md, "The load tool's own cost"). The answer is parsed by net/http
// (http.ReadResponse: status, headers, Content-Length or chunked bodies); only the connection handling is
// the tool's.
//
// A reused connection that the server closed while it was idle fails before any byte of the answer; the
// exchange is then sent once more on a new connection when it may be (a GET, or a request with an
// Idempotency-Key: net/http's rule), and fails otherwise.
type connPool struct {
	addr string // host:port to dial
	host string // Host header
	path string // the target's path prefix, escaped, without a trailing slash
	max  int    // idle connections kept
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   []*poolConn
	closed bool
}

type poolConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// maxBody is the most of an answer's body the tool reads; the rest is dropped (with its connection).
const maxBody = 1 << 20

// newConnPool returns a pool for the target base, or nil when net/http must speak to it (https, a user or a
// query in the URL).
func newConnPool(base string, maxIdle int) *connPool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &connPool{addr: addr, host: u.Host, path: strings.TrimRight(u.EscapedPath(), "/"), max: max(maxIdle, 1), dial: d.DialContext}
}

// exchanged is an answer read whole (its body up to maxBody).
type exchanged struct {
	status int
	header http.Header
	body   []byte
}

// exchange sends one request and reads its answer within timeout (and ctx). path is escaped and starts with /.
func (p *connPool) exchange(ctx context.Context, method, path string, hdr http.Header, body []byte, timeout time.Duration) (exchanged, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for k, vs := range hdr {
		for _, v := range vs {
			if k == "" || strings.ContainsAny(k, "\r\n: ") || strings.ContainsAny(v, "\r\n") {
				return exchanged{}, fmt.Errorf("header %q: a name or value that HTTP cannot carry", k)
			}
		}
	}
	replayable := method == http.MethodGet || method == http.MethodHead || hdr.Get("Idempotency-Key") != ""
	for attempt := 0; ; attempt++ {
		pc, reused, err := p.get(ctx)
		if err != nil {
			return exchanged{}, err
		}
		ans, keep, nothingRead, err := pc.roundTrip(ctx, deadline, p.host, method, p.path+path, hdr, body)
		if err == nil {
			if keep {
				p.put(pc)
			} else {
				pc.c.Close()
			}
			return ans, nil
		}
		pc.c.Close()
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		if reused && nothingRead && replayable && attempt == 0 && time.Now().Before(deadline) {
			continue // the server had closed the idle connection
		}
		return ans, err
	}
}

// get takes an idle connection (the one used last) or dials a new one.
func (p *connPool) get(ctx context.Context) (pc *poolConn, reused bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errors.New("client closed")
	}
	if n := len(p.idle); n > 0 {
		pc = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return pc, true, nil
	}
	p.mu.Unlock()
	c, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	return &poolConn{c: c, br: bufio.NewReaderSize(c, 4096), bw: bufio.NewWriterSize(c, 4096)}, false, nil
}

// put keeps a connection for the next exchange, or closes it when max are idle already.
func (p *connPool) put(pc *poolConn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= p.max {
		p.mu.Unlock()
		pc.c.Close()
		return
	}
	p.idle = append(p.idle, pc)
	p.mu.Unlock()
}

// close closes the idle connections; an exchange in flight closes its own when it ends.
func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, pc := range idle {
		pc.c.Close()
	}
}

// roundTrip writes the request and reads the answer on pc. keep says the connection can serve another
// exchange; nothingRead that it failed before the answer's first byte.
func (pc *poolConn) roundTrip(ctx context.Context, deadline time.Time, host, method, target string, hdr http.Header, body []byte) (ans exchanged, keep, nothingRead bool, err error) {
	if err := pc.c.SetDeadline(deadline); err != nil {
		return ans, false, true, err
	}
	// A cancelled ctx ends a blocked read or write at once.
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if err := writeRequest(pc.bw, host, method, target, hdr, body); err != nil {
		return ans, false, true, err
	}
	if _, err := pc.br.Peek(1); err != nil {
		return ans, false, true, err
	}
	resp, err := http.ReadResponse(pc.br, nil)
	if err != nil {
		return ans, false, false, fmt.Errorf("read the answer: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return exchanged{status: resp.StatusCode, header: resp.Header, body: raw}, false, false, fmt.Errorf("read the answer's body: %w", err)
	}
	whole := len(raw) <= maxBody
	if !whole {
		raw = raw[:maxBody]
	}
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 // not delimited by the connection's close
	return exchanged{status: resp.StatusCode, header: resp.Header, body: raw}, whole && framed && !resp.Close, false, nil
}

// writeRequest writes an HTTP/1.1 request with a Content-Length body (none for a GET without one); the
// headers were checked by exchange.
func writeRequest(w *bufio.Writer, host, method, target string, hdr http.Header, body []byte) error {
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(target)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\nUser-Agent: ordersaga-flashsale\r\n")
	for k, vs := range hdr {
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	if body != nil || method == http.MethodPost || method == http.MethodPut {
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.Itoa(len(body)))
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	w.Write(body)
	return w.Flush()
}
