package memredis

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"golang.org/x/net/nettest"
)

// resp encodes one command as the stack's client sends it (a RESP array of bulk strings).
func resp(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// answers writes script to c in pieces of size bytes (the last may be shorter) and reads until want bytes
// have come back.
func answers(t *testing.T, c net.Conn, script string, size, want int) string {
	t.Helper()
	for i := 0; i < len(script); i += size {
		if _, err := c.Write([]byte(script[i:min(i+size, len(script))])); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, want)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %d bytes of answers: %v (so far %q)", want, err, got)
	}
	return string(got)
}

// The direct connection answers a script byte for byte as miniredis's own server does over TCP, however the
// commands are cut across writes: one byte at a time, cut inside a header or a value, or all at once.
func TestDirectConnAnswersAsTheServedConnection(t *testing.T) {
	r := miniredis.RunT(t)
	script := resp("HELLO", "3") +
		resp("SET", "k", "a value\r\nwith a CRLF inside") + resp("GET", "k") +
		resp("HSET", "h", "f1", "1", "f2", "2") + resp("HVALS", "h") + resp("EXISTS", "k", "nope") +
		resp("EVAL", "redis.call('INCRBY', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])", "1", "n", "7") +
		resp("MULTI") + resp("INCR", "n") + resp("GET", "n") + resp("EXEC") +
		resp("NOSUCHCOMMAND", "x") + resp("GET", "n") + resp("DEL", "k", "h", "n")

	tcp, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	// The served connection's answer, read until the last command's (DEL of 3 keys) is in.
	if _, err := tcp.Write([]byte(script)); err != nil {
		t.Fatal(err)
	}
	var want []byte
	buf := make([]byte, 4096)
	tcp.SetReadDeadline(time.Now().Add(5 * time.Second))
	for !bytes.HasSuffix(want, []byte(":3\r\n")) {
		n, err := tcp.Read(buf)
		if err != nil {
			t.Fatalf("tcp read: %v (so far %q)", err, want)
		}
		want = append(want, buf[:n]...)
	}
	if !bytes.Contains(want, []byte("a value\r\nwith a CRLF inside")) || !bytes.Contains(want, []byte("NOSUCHCOMMAND")) {
		t.Fatalf("the served connection's answers miss what the script asks: %q", want)
	}

	for _, size := range []int{1, 2, 3, 5, 7, 13, 64, len(script)} {
		c := newDirectConn(r.Server())
		got := answers(t, c, script, size, len(want))
		c.Close()
		if got != string(want) {
			t.Fatalf("written %d bytes at a time:\n got %q\nwant %q", size, got, want)
		}
	}
}

// A command whose answer comes later (blocking, subscribing) is refused with an error naming it, and the
// connection goes on answering; bytes that are no command close it with an error.
func TestDirectConnRefusesWhatItCannotCarry(t *testing.T) {
	r := miniredis.RunT(t)
	c := newDirectConn(r.Server())
	defer c.Close()
	got := answers(t, c, resp("BLPOP", "q", "0")+resp("PING"), 4096, len("-ERR BLPOP is not run on the stack's direct connection\r\n+PONG\r\n"))
	if got != "-ERR BLPOP is not run on the stack's direct connection\r\n+PONG\r\n" {
		t.Fatalf("answers %q", got)
	}

	bad := newDirectConn(r.Server())
	if _, err := bad.Write([]byte("PING\r\n")); err == nil || !strings.Contains(err.Error(), "not a RESP array") {
		t.Fatalf("inline command: err %v, want one saying it is not a RESP array", err)
	}
	if _, err := bad.Write([]byte(resp("PING"))); err == nil {
		t.Fatal("a write after a bad command went through: the connection should be closed")
	}
}

// An empty read waits for its deadline (the client's read deadline is how it stops waiting), and a QUIT
// answers and closes.
func TestDirectConnDeadlineAndQuit(t *testing.T) {
	r := miniredis.RunT(t)
	c := newDirectConn(r.Server())
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing to read: err %v, want the deadline's", err)
	}
	if got := answers(t, c, resp("QUIT"), 4096, len("+OK\r\n")); got != "+OK\r\n" {
		t.Fatalf("QUIT answered %q", got)
	}
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after QUIT's answer: %d bytes, err %v, want io.EOF", n, err)
	}
	if _, err := c.Write([]byte(resp("PING"))); err == nil {
		t.Fatal("a write after QUIT went through")
	}
}

// memPipe behaves as a net.Conn must: ordered bytes both ways, concurrent calls, deadlines in the past, now
// and the future, moved while a call waits, and Close.
func TestMemPipeIsAConn(t *testing.T) {
	nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
		a, b := memPipe()
		return a, b, func() { a.Close(); b.Close() }, nil
	})
}
