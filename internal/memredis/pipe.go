package memredis

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// memPipe returns the two ends of an in-memory connection. Unlike net.Pipe, a write never waits for the
// reader: it appends to the other end's buffer and returns. A Redis client writes a whole pipeline before it
// reads an answer while the server answers each command as it reads it, so over a pipe without a buffer each
// would wait for the other for ever (a TCP connection has the kernel's buffers in between).
func memPipe() (net.Conn, net.Conn) {
	a, b := newMemBuffer(), newMemBuffer()
	return newMemConn(a, b), newMemConn(b, a)
}

// newMemConn returns an end that reads in and writes out.
func newMemConn(in, out *memBuffer) *memConn {
	return &memConn{in: in, out: out, closed: make(chan struct{}), rd: newDeadline(), wd: newDeadline()}
}

// memBuffer is one direction of a memPipe: bytes written and not read yet.
type memBuffer struct {
	mu    sync.Mutex
	data  []byte // data[off:] is unread
	off   int
	eof   bool          // an end was closed: reads return io.EOF once data is empty, writes fail
	ready chan struct{} // a token when data or eof changed (capacity 1: a reader never misses one)
}

// maxKeptBuffer is the largest array a drained memBuffer keeps for the next writes.
const maxKeptBuffer = 64 << 10

func newMemBuffer() *memBuffer { return &memBuffer{ready: make(chan struct{}, 1)} }

func (b *memBuffer) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

type memConn struct {
	in, out   *memBuffer
	rd, wd    *deadline
	closeOnce sync.Once
	closed    chan struct{} // this end was closed
}

// usable is nil while this end is open and d (its read or write deadline) has not passed.
func (c *memConn) usable(d *deadline) error {
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	case <-d.wait():
		return os.ErrDeadlineExceeded
	default:
		return nil
	}
}

func (c *memConn) Read(p []byte) (int, error) {
	for {
		if err := c.usable(c.rd); err != nil {
			return 0, err
		}
		b := c.in
		b.mu.Lock()
		if b.off < len(b.data) {
			n := copy(p, b.data[b.off:])
			b.off += n
			if b.off == len(b.data) { // drained: write from the start again, and let a big array go
				b.data, b.off = b.data[:0], 0
				if cap(b.data) > maxKeptBuffer {
					b.data = nil
				}
			}
			b.mu.Unlock()
			return n, nil
		}
		eof := b.eof
		b.mu.Unlock()
		if eof {
			return 0, io.EOF
		}
		select {
		case <-b.ready:
		case <-c.closed:
		case <-c.rd.wait():
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	if err := c.usable(c.wd); err != nil {
		return 0, err
	}
	return c.out.Write(p)
}

// end marks b closed: its reader gets what is left, then io.EOF, and writes fail.
func (b *memBuffer) end() {
	b.mu.Lock()
	b.eof = true
	b.mu.Unlock()
	b.signal()
}

// ended reports whether an end of b was closed.
func (b *memBuffer) ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// Write appends p for the reader of b, unless an end was closed.
func (b *memBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.eof {
		b.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	b.data = append(b.data, p...)
	b.mu.Unlock()
	b.signal()
	return len(p), nil
}

// Close ends this end: its own reads and writes fail, the other end reads what was written and then io.EOF,
// and its writes fail.
func (c *memConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.out.end()
		c.in.end()
	})
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

func (c *memConn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}
func (c *memConn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// deadline is a read or write deadline of a memConn: wait returns a channel that is closed once it has
// passed, and set may move it at any time (a call waiting on the old channel then wakes up when the new
// deadline passes, or at once if it is in the past).
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	passed chan struct{}
}

func newDeadline() *deadline { return &deadline{passed: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer fired: its function closes passed, if it has not yet
	}
	d.timer = nil
	select {
	case <-d.passed:
		d.passed = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	if dur := time.Until(t); dur > 0 {
		passed := d.passed
		d.timer = time.AfterFunc(dur, func() { close(passed) })
		return
	}
	close(d.passed)
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}
