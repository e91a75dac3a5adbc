package devserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/workflows"
)

func freePort(tb testing.TB) int {
	tb.Helper()
	p, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func startTemporal(tb testing.TB, dbFile string) *devserver.Temporal {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.StartTemporal(ctx, devserver.TemporalOptions{
		IP: "127.0.0.1", FrontendPort: freePort(tb), DBFile: dbFile,
		Namespace: "default", SearchAttributes: workflows.SearchAttributes(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

func dial(tb testing.TB, addr string) client.Client {
	tb.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: "default",
		Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func TestTemporalPersistsAndRegistersSearchAttributes(t *testing.T) {
	t.Parallel()
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	ctx := context.Background()

	srv := startTemporal(t, dbFile)
	c := dial(t, srv.Address())
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range workflows.SearchAttributes() {
		if got := sa.GetCustomAttributes()[name]; got != typ {
			t.Errorf("search attribute %s: got %v, want %v", name, got, typ)
		}
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "kept", TaskQueue: "nobody-polls"}, "Whatever")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	srv = startTemporal(t, dbFile)
	defer srv.Stop()
	c = dial(t, srv.Address())
	desc, err := c.DescribeWorkflowExecution(ctx, "kept", run.GetRunID())
	if err != nil {
		t.Fatalf("workflow started before the restart: %v", err)
	}
	if s := desc.GetWorkflowExecutionInfo().GetStatus().String(); s != "Running" {
		t.Errorf("status after restart: %s, want Running", s)
	}
}

func TestUIListsWorkflows(t *testing.T) {
	t.Parallel()
	srv := startTemporal(t, "")
	defer srv.Stop()
	ctx := context.Background()
	c := dial(t, srv.Address())
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "listed", TaskQueue: "nobody-polls"}, "Whatever"); err != nil {
		t.Fatal(err)
	}

	ui, err := devserver.StartUI(ctx, devserver.UIOptions{IP: "127.0.0.1", Port: freePort(t), PortFlag: "ui-port",
		TemporalAddress: srv.Address(), DefaultNamespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()

	resp, err := http.Get(ui.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Fatalf("GET /: %s, %.200s", resp.Status, body)
	}

	q := url.Values{"query": {"WorkflowId='listed'"}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(ui.URL() + "/api/v1/namespaces/default/workflows?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Executions []struct {
				Execution struct {
					WorkflowID string `json:"workflowId"`
				} `json:"execution"`
			} `json:"executions"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err == nil && len(list.Executions) == 1 && list.Executions[0].Execution.WorkflowID == "listed" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow list through the UI: %s, %+v, %v", resp.Status, list, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestUIPortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = devserver.StartUI(context.Background(), devserver.UIOptions{IP: "127.0.0.1", Port: port, PortFlag: "ui-port",
		TemporalAddress: "127.0.0.1:1", DefaultNamespace: "default"})
	var inUse *devserver.PortInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("got %v, want a PortInUseError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "--ui-port") || !strings.Contains(msg, ln.Addr().String()) {
		t.Errorf("message %q does not name the port and the flag", msg)
	}
}
