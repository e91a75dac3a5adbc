package sale_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
)

const soldOutBody = `{"type":"https://ordersaga.dev/problems/sold-out","title":"Sold out","status":409,"detail":"no stock"}`

// countConns serves h and counts the connections the server accepted.
func countConns(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestClientSendsTheRequestAndKeepsOneConnection(t *testing.T) {
	type seen struct{ method, path, key, ctype, body string }
	var mu sync.Mutex
	var got []seen
	srv, conns := countConns(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, soldOutBody)
	}))
	c := sale.NewClient(srv.URL+"/shop/", "", "", 4, 5*time.Second)
	defer c.Close()
	for i := range 20 {
		a, _, err := c.PlaceOrder(context.Background(), fmt.Sprintf("k-%d", i), []byte(`{"user_id":"u","lines":[{"sku":"S","qty":1}]}`))
		if err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
		if a.Status != http.StatusConflict || !strings.HasSuffix(a.Problem.Type, "/sold-out") || a.Problem.Detail != "no stock" {
			t.Fatalf("order %d: answer %d %+v, want 409 sold-out", i, a.Status, a.Problem)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 orders one after the other opened %d connections, want 1", n)
	}
	want := seen{"POST", "/shop/v1/orders", "k-7", "application/json", `{"user_id":"u","lines":[{"sku":"S","qty":1}]}`}
	if len(got) != 20 || got[7] != want {
		t.Fatalf("the server got %d requests, the 8th %+v, want %+v", len(got), got[7], want)
	}
}

func TestClientReadsChunkedAndClosingAnswers(t *testing.T) {
	order := ordersaga.Order{OrderID: "o-1", Status: ordersaga.StatusAwaitingPayment, AmountCents: 999}
	srv, conns := countConns(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("x") != "" {
			t.Errorf("unexpected query %q", r.URL.RawQuery)
		}
		switch r.URL.Path {
		case "/v1/orders/o-1": // chunked: written in two flushed parts
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"order_id":"o-1","status":"AWAITING_PAYMENT",`)
			w.(http.Flusher).Flush()
			io.WriteString(w, `"amount_cents":999}`)
		case "/v1/orders/o-2": // the server closes the connection after this answer
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"order_id":"o-2","status":"PAID"}`)
		}
	}))
	c := sale.NewClient(srv.URL, "", "", 4, 5*time.Second)
	defer c.Close()
	for i := range 3 {
		o, err := c.GetOrder(context.Background(), "o-1")
		if err != nil || o.OrderID != order.OrderID || o.Status != order.Status || o.AmountCents != order.AmountCents {
			t.Fatalf("chunked answer %d: %+v, %v", i, o, err)
		}
		if o, err := c.GetOrder(context.Background(), "o-2"); err != nil || o.Status != ordersaga.StatusPaid {
			t.Fatalf("closing answer %d: %+v, %v", i, o, err)
		}
	}
	// o-1's connection serves the next o-1 only when o-2's answer closed the one before: 3 rounds, 3 connections.
	if n := conns.Load(); n != 3 {
		t.Errorf("3 rounds of a chunked answer and a Connection: close one opened %d connections, want 3", n)
	}
}

// closingServer answers every request 409 sold-out and then closes the connection without saying so (as a
// server whose idle timeout fires just as the client reuses the connection). It counts requests and
// connections.
func closingServer(t *testing.T) (url string, requests, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests, conns = new(atomic.Int64), new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				requests.Add(1)
				fmt.Fprintf(c, "HTTP/1.1 409 Conflict\r\nContent-Type: application/problem+json\r\nContent-Length: %d\r\n\r\n%s", len(soldOutBody), soldOutBody)
			}()
		}
	}()
	return "http://" + ln.Addr().String(), requests, conns
}

func TestClientResendsAnIdempotentRequestOnAConnectionTheServerClosed(t *testing.T) {
	url, requests, conns := closingServer(t)
	c := sale.NewClient(url, "", "secret", 4, 5*time.Second)
	defer c.Close()
	for i := range 3 {
		a, _, err := c.PlaceOrder(context.Background(), fmt.Sprintf("k-%d", i), []byte(`{}`))
		if err != nil || a.Status != http.StatusConflict {
			t.Fatalf("order %d on a connection the server closed: %d, %v", i, a.Status, err)
		}
	}
	if r, n := requests.Load(), conns.Load(); r != 3 || n < 3 {
		t.Errorf("server: %d requests on %d connections, want 3 on 3 or more", r, n)
	}
	// A payment event carries no Idempotency-Key: on a connection the server closed it fails, never sent twice.
	time.Sleep(50 * time.Millisecond) // the server has closed the last connection
	before := requests.Load()
	_, _, err := c.Pay(context.Background(), ordersaga.PaymentEvent{EventID: "e-1", OrderID: "o-1", AmountCents: 1, Currency: "CNY", Status: "succeeded"})
	if err == nil {
		t.Fatal("a payment on a connection the server closed succeeded; want the transport's error")
	}
	if got := requests.Load() - before; got != 0 {
		t.Errorf("the failed payment reached the server %d times, want 0", got)
	}
}

func TestClientTimesOutAndStopsOnCancel(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countConns(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	c := sale.NewClient(srv.URL, "", "", 4, 200*time.Millisecond)
	defer c.Close()
	start := time.Now()
	_, _, err := c.PlaceOrder(context.Background(), "k-slow", []byte(`{}`))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("an answer slower than the request timeout: %v, want a timeout error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout of 200ms ended the request after %s", d)
	}

	c = sale.NewClient(srv.URL, "", "", 4, time.Minute)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, _, err := c.PlaceOrder(ctx, "k-cancel", []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request whose context was cancelled: %v, want context.Canceled", err)
	}
}
