// Command paysim plays the payment provider locally, on both sides of its API:
//
//	paysim [flags] pay <order_id>   signs a payment event the way the provider does (internal/webhook) and
//	                                posts it to the order API's webhook: pay an order, twice, late, or the
//	                                wrong amount (docs/api.md)
//	paysim serve [flags]            serves the provider's refund API (internal/refundsim) until SIGINT or
//	                                SIGTERM, for the worker's refund sender (REFUND_PROVIDER_URL)
//	paysim refunds [flags]          prints what a `paysim serve` executed and refused
//
// `paysim <word> -h` lists a word's flags. A bad command line exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "paysim:", err)
	}
	os.Exit(exitCode(err))
}

// usageError is a mistake in the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is 0 for success and -h, 2 for a bad command line (as the flag package's ExitOnError), 1 else.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// words are paysim's commands.
var words = map[string]func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error{
	"pay":     runPay,
	"serve":   runServe,
	"refunds": runRefunds,
}

const usage = `usage: paysim [flags] pay <order_id>
       paysim serve [flags]
       paysim refunds [flags]
(paysim <word> -h: the word's flags)`

// run finds the word (the first argument that is one; flags may come before it) and runs it with the other
// arguments.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	i := slices.IndexFunc(rest, func(a string) bool { return words[a] != nil })
	if i < 0 {
		fmt.Fprintln(stdout, usage)
		if slices.ContainsFunc(rest, func(a string) bool { return strings.TrimLeft(a, "-") == "h" || strings.TrimLeft(a, "-") == "help" }) {
			return flag.ErrHelp
		}
		return usageError{errors.New("want a word: pay, serve or refunds")}
	}
	return words[rest[i]](ctx, slices.Concat(rest[:i], rest[i+1:]), getenv, stdout, stderr)
}

// newFlags is a word's flag set; -h and a mistake print usage (the word's command line) and the flags on stdout.
func newFlags(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintln(stdout, "usage: "+usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseN parses args with fs and answers the positional arguments, a usageError saying want unless there
// are exactly n of them.
func parseN(fs *flag.FlagSet, args []string, n int, want string) ([]string, error) {
	positional, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(positional) != n {
		fs.Usage()
		return nil, usageError{fmt.Errorf("%s, got %q", want, positional)}
	}
	return positional, nil
}

// parse parses args with fs, flags before, between and after the positional arguments, which it returns.
// A bad flag is a usageError naming it (fs has printed it with the usage).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// splitSecrets reads a comma-separated list of secrets (REFUND_PROVIDER_SECRET's and
// PAYMENT_WEBHOOK_SECRET's format), blanks dropped.
func splitSecrets(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
