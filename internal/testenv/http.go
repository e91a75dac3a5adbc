package testenv

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// Response is an HTTP answer read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends one request (body, when not nil, as JSON; header's fields added) and reads the answer whole,
// within 3 minutes. A request that cannot be sent or read ends the test.
func Do(tb testing.TB, method, url string, body []byte, header map[string]string) Response {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatalf("%s %s: read the answer: %v", method, url, err)
	}
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}
}
