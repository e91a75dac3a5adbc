package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/ordersaga/ordersaga/internal/memredis"
)

// embeddedRedis is miniredis on a TCP port. It lives in memory, so a clean stop writes its keys to a snapshot
// file that the next start loads and deletes: holds and per-order markers survive a restart, and a snapshot
// older than a crash is never loaded (without one the inventory is loaded from the database instead).
type embeddedRedis struct {
	mr       *miniredis.Miniredis
	snapshot string // "" keeps nothing
	log      *slog.Logger
	stopTick chan struct{}
	wg       sync.WaitGroup
}

type redisSnapshot struct {
	SavedAt time.Time      `json:"saved_at"`
	Keys    []snapshotItem `json:"keys"`
}

type snapshotItem struct {
	Key       string            `json:"key"`
	Type      string            `json:"type"`
	String    string            `json:"string,omitempty"`
	Hash      map[string]string `json:"hash,omitempty"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

// startEmbeddedRedis listens on addr and loads the snapshot file if there is one. restored reports whether it
// did (if not, Redis is empty and the caller loads the inventory).
func startEmbeddedRedis(addr, snapshot string, log *slog.Logger) (r *embeddedRedis, restored bool, err error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr(addr); err != nil {
		return nil, false, fmt.Errorf("embedded redis on %s: %w", addr, err)
	}
	r = &embeddedRedis{mr: mr, snapshot: snapshot, log: log, stopTick: make(chan struct{})}
	if snapshot != "" {
		restored, err = r.restore()
		if err != nil {
			mr.Close()
			return nil, false, err
		}
	}
	// miniredis moves TTLs only when told to: tell it as time passes, so markers expire as in Redis.
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		const every = 10 * time.Second
		t := time.NewTicker(every)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-r.stopTick:
				return
			case now := <-t.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return r, restored, nil
}

func (r *embeddedRedis) Addr() string { return r.mr.Addr() }

// dial connects the stack's own Redis client to the embedded Redis in memory: no socket, and no system call
// per command on either side (measured in BENCHMARKS.md, "What each change bought"); each command runs in the
// goroutine that writes it (internal/memredis). The TCP port stays open for every other client (redis-cli, the load
// tool).
func (r *embeddedRedis) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return memredis.Dialer(r.mr)(ctx, network, addr)
}

// Close writes the snapshot (the worker must be stopped first, so nothing changes meanwhile) and stops.
func (r *embeddedRedis) Close() error {
	close(r.stopTick)
	r.wg.Wait()
	var err error
	if r.snapshot != "" {
		err = r.save()
	}
	r.mr.Close()
	return err
}

func (r *embeddedRedis) save() error {
	now := time.Now().UTC()
	snap := redisSnapshot{SavedAt: now}
	keys := r.mr.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		item := snapshotItem{Key: k, Type: r.mr.Type(k)}
		switch item.Type {
		case "string":
			v, err := r.mr.Get(k)
			if err != nil {
				return fmt.Errorf("redis snapshot: %s: %w", k, err)
			}
			item.String = v
		case "hash":
			fields, err := r.mr.HKeys(k)
			if err != nil {
				return fmt.Errorf("redis snapshot: %s: %w", k, err)
			}
			item.Hash = make(map[string]string, len(fields))
			for _, f := range fields {
				item.Hash[f] = r.mr.HGet(k, f)
			}
		default:
			r.log.Warn("redis snapshot: key of a type the stack does not use, not kept", "key", k, "type", item.Type)
			continue
		}
		if ttl := r.mr.TTL(k); ttl > 0 {
			at := now.Add(ttl)
			item.ExpiresAt = &at
		}
		snap.Keys = append(snap.Keys, item)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("redis snapshot: %w", err)
	}
	tmp := r.snapshot + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("redis snapshot: %w", err)
	}
	if err := os.Rename(tmp, r.snapshot); err != nil {
		return fmt.Errorf("redis snapshot: %w", err)
	}
	return nil
}

func (r *embeddedRedis) restore() (bool, error) {
	b, err := os.ReadFile(r.snapshot)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("redis snapshot: %w", err)
	}
	var snap redisSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return false, fmt.Errorf("redis snapshot %s: %w (delete the file to load the inventory from the database)", r.snapshot, err)
	}
	now := time.Now()
	for _, it := range snap.Keys {
		var ttl time.Duration
		if it.ExpiresAt != nil {
			if ttl = it.ExpiresAt.Sub(now); ttl <= 0 {
				continue
			}
		}
		switch it.Type {
		case "string":
			if err := r.mr.Set(it.Key, it.String); err != nil {
				return false, fmt.Errorf("redis snapshot: %s: %w", it.Key, err)
			}
		case "hash":
			for f, v := range it.Hash {
				r.mr.HSet(it.Key, f, v)
			}
		}
		if ttl > 0 {
			r.mr.SetTTL(it.Key, ttl)
		}
	}
	// Loaded once: after a crash the file would be older than what the worker did since, so it must not be
	// loaded again. The next clean stop writes a new one.
	if err := os.Remove(r.snapshot); err != nil {
		return false, fmt.Errorf("redis snapshot: %w", err)
	}
	return true, nil
}
