package refundsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
)

// Fetch reads the report of the simulator at base (GET {base}/v1/refunds), for tools that drive a simulator
// in another process. A nil c is http.DefaultClient.
func Fetch(ctx context.Context, base string, c *http.Client) (Report, error) {
	var rep Report
	err := call(ctx, c, http.MethodGet, strings.TrimRight(base, "/")+refunds.RefundsPath, nil, &rep)
	if err != nil {
		return Report{}, fmt.Errorf("refund simulator report: %w", err)
	}
	return rep, nil
}

// PutFaults sets the faults of the simulator at base (PUT {base}/v1/sim/faults): the shares f and, when
// blackhole > 0, a blackhole that long from now (0 ends any). A nil c is http.DefaultClient.
func PutFaults(ctx context.Context, base string, f Faults, blackhole time.Duration, c *http.Client) error {
	body, err := json.Marshal(Settings{Faults: f, BlackholeSeconds: max(blackhole, 0).Seconds()})
	if err != nil {
		return fmt.Errorf("refund simulator faults: %w", err)
	}
	if err := call(ctx, c, http.MethodPut, strings.TrimRight(base, "/")+faultsPath, body, nil); err != nil {
		return fmt.Errorf("refund simulator faults: %w", err)
	}
	return nil
}

// call sends body (when not nil) and decodes a 200's JSON into out (when not nil).
func call(ctx context.Context, c *http.Client, method, url string, body []byte, out any) error {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if res.StatusCode != http.StatusOK {
		var p refunds.Problem
		if json.Unmarshal(b, &p) == nil && p.Code != "" {
			return fmt.Errorf("%s %s: %d %s: %s", method, url, res.StatusCode, p.Code, p.Reason)
		}
		return fmt.Errorf("%s %s: %d", method, url, res.StatusCode)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	return nil
}
