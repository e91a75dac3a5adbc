package devserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// UIOptions configure the Temporal UI server.
type UIOptions struct {
	IP   string
	Port int
	// PortFlag names the flag that sets Port, for the error when the port is taken.
	PortFlag string
	// TemporalAddress is the frontend the UI talks to.
	TemporalAddress  string
	DefaultNamespace string
}

// UI is a running Temporal UI.
type UI struct {
	srv  *uiserver.Server
	url  string
	done chan struct{}
}

// StartUI serves the Temporal UI (its assets are embedded in the module: nothing is fetched) and returns once
// it answers /healthz. The UI server exits the whole process when it cannot listen, so the port is checked
// first and a taken one is a *PortInUseError.
func StartUI(ctx context.Context, opts UIOptions) (*UI, error) {
	addr := HostPort(opts.IP, opts.Port)
	if err := CheckPort(addr, opts.PortFlag); err != nil {
		return nil, err
	}
	srv := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: opts.TemporalAddress,
		Host:                opts.IP,
		Port:                opts.Port,
		EnableUI:            true,
		DefaultNamespace:    opts.DefaultNamespace,
		// Plain HTTP on localhost: the CSRF cookie must not require TLS.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
		// No calls to the internet (news, release checks): the stack runs offline.
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		// RefreshInterval stays 0: the UI's config refresher spins once stopped.
	}))
	u := &UI{srv: srv, url: "http://" + addr, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		_ = srv.Start()
	}()
	if err := u.waitHealthy(ctx, 30*time.Second); err != nil {
		u.Stop()
		return nil, fmt.Errorf("start temporal ui: %w", err)
	}
	return u, nil
}

// URL is the UI's base URL.
func (u *UI) URL() string { return u.url }

// Stop closes the UI's listener and connections.
func (u *UI) Stop() {
	u.srv.Stop()
	select {
	case <-u.done:
	case <-time.After(5 * time.Second):
	}
}

func (u *UI) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-u.done:
			return errors.New("ui server stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
