package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxy is a Toxiproxy proxy running in this process in front of one upstream TCP address. Clients dial
// Addr instead of the upstream; toxics added to the proxy act on every connection through it.
type Proxy struct {
	mu    sync.Mutex
	proxy *toxiproxy.Proxy
	// Addr is the proxy's listen address (127.0.0.1 and a port of its own), stable across ResetConnections.
	Addr string
	// injected counts the toxics added and the connection resets, for a test's figures.
	injected int
	toxics   []string // the names of the toxics in place
}

// NewProxy starts a proxy named name on a free local port in front of upstream (host:port).
func NewProxy(name, upstream string) (*Proxy, error) {
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faults: start proxy %s to %s: %w", name, upstream, err)
	}
	return &Proxy{proxy: p, Addr: p.Listen}, nil
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() { p.proxy.Stop() }

// Injected is how many toxics and connection resets the proxy has been given.
func (p *Proxy) Injected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected
}

// addToxic adds one toxic, as Toxiproxy's API takes it, in both directions when stream is "".
func (p *Proxy) addToxic(name, kind, stream string, attributes string) error {
	streams := []string{stream}
	if stream == "" {
		streams = []string{"upstream", "downstream"}
	}
	for _, s := range streams {
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name+"_"+s, kind, s, attributes)
		t, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(body))
		if err != nil {
			return fmt.Errorf("faults: add %s toxic %s to proxy %s: %w", kind, name, p.proxy.Name, err)
		}
		p.mu.Lock()
		p.toxics = append(p.toxics, t.Name)
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.injected++
	p.mu.Unlock()
	return nil
}

// Latency delays every reply by latency, give or take jitter, until RemoveToxics.
func (p *Proxy) Latency(latency, jitter time.Duration) error {
	return p.addToxic("latency", "latency", "downstream",
		fmt.Sprintf(`{"latency":%d,"jitter":%d}`, latency.Milliseconds(), jitter.Milliseconds()))
}

// ResetPeer resets (TCP RST) every connection that sends data, after the given delay, until RemoveToxics:
// each new connection dies on its first request.
func (p *Proxy) ResetPeer(after time.Duration) error {
	return p.addToxic("reset_peer", "reset_peer", "upstream", fmt.Sprintf(`{"timeout":%d}`, after.Milliseconds()))
}

// Blackhole swallows every byte in both directions, without closing a connection, until RemoveToxics: the
// server looks alive to a dial and never answers.
func (p *Proxy) Blackhole() error {
	return p.addToxic("blackhole", "timeout", "", `{"timeout":0}`)
}

// BlackholeFor is Blackhole for d (or until ctx ends), then RemoveToxics.
func (p *Proxy) BlackholeFor(ctx context.Context, d time.Duration) error {
	if err := p.Blackhole(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return p.RemoveToxics()
}

// ResetConnections closes every connection through the proxy at once (the clients see their connections
// drop) and listens again on the same address.
func (p *Proxy) ResetConnections() error {
	p.proxy.Stop()
	p.proxy.Listen = p.Addr
	if err := p.proxy.Start(); err != nil {
		return fmt.Errorf("faults: restart proxy %s on %s: %w", p.proxy.Name, p.Addr, err)
	}
	p.mu.Lock()
	p.injected++
	p.mu.Unlock()
	return nil
}

// RemoveToxics removes every toxic: the connections through the proxy flow as before.
func (p *Proxy) RemoveToxics() error {
	p.mu.Lock()
	names := p.toxics
	p.toxics = nil
	p.mu.Unlock()
	for _, name := range names {
		if err := p.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
			return fmt.Errorf("faults: remove toxic %s from proxy %s: %w", name, p.proxy.Name, err)
		}
	}
	return nil
}
