package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// shutdownWait bounds the wait for requests in flight once paysim serve is told to stop.
const shutdownWait = 5 * time.Second

// share is a flag.Value for a fault share: a number in [0, 1].
type share float64

func (s *share) String() string { return strconv.FormatFloat(float64(*s), 'g', -1, 64) }

func (s *share) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return errors.New("want a share between 0 and 1, e.g. 0.1")
	}
	*s = share(f)
	return nil
}

// runServe is `paysim serve`: the refund provider simulator until ctx ends (SIGINT, SIGTERM). It prints one
// line on stdout once it listens, and logs each refund request on stderr.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		addr, secret          string
		fail, timeout, refuse share
		seed                  int64
	)
	fs := newFlags("paysim serve", "paysim serve [flags]", stdout)
	fs.StringVar(&addr, "addr", refundsim.DefaultAddr, "address to listen on (port 0: any free port)")
	// No default shown: it may be a real secret.
	fs.StringVar(&secret, "secret", "", "secrets the requests may be signed with, comma-separated (default: REFUND_PROVIDER_SECRET, else the local stack's "+refundsim.LocalStackSecret+")")
	fs.Var(&fail, "fail-share", "`share` (0 to 1) of requests answered 503, nothing executed")
	fs.Var(&timeout, "timeout-share", "`share` (0 to 1) of requests executed and never answered (a retry replays them)")
	fs.Var(&refuse, "refuse-share", "`share` (0 to 1) of event IDs refused for good (422)")
	fs.Int64Var(&seed, "seed", 0, "seed of the fail and timeout draws (0: from the clock)")
	if _, err := parseN(fs, args, 0, "serve takes no argument"); err != nil {
		return err
	}
	secrets := splitSecrets(or(secret, getenv("REFUND_PROVIDER_SECRET")))
	if len(secrets) == 0 {
		secrets = []string{refundsim.LocalStackSecret}
	}
	sim, err := refundsim.New(refundsim.Options{
		Secrets: secrets,
		Faults:  refundsim.Faults{FailShare: float64(fail), TimeoutShare: float64(timeout), RefuseShare: float64(refuse)},
		Seed:    seed,
		Log:     slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if err != nil {
		return err
	}
	return serve(ctx, sim, addr, stdout)
}

// serve listens on addr, says so on stdout, and serves sim until ctx ends.
func serve(ctx context.Context, sim *refundsim.Server, addr string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: -addr %s: %w", addr, err)
	}
	// No WriteTimeout: a lost answer (-timeout-share) is held until the client gives up.
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	fmt.Fprintf(stdout, "paysim: refund provider listening on http://%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sim.Close()
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}
