package redisstock

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// redisCallError marks the error of a call to Redis (FromRedis).
type redisCallError struct{ err error }

func (e *redisCallError) Error() string { return e.err.Error() }
func (e *redisCallError) Unwrap() error { return e.err }

// FromRedis marks err as the error of a call to Redis, for IsUnreachable (nil stays nil). Mark it where the
// Redis call returns it, and never an error that may come from the database: the database driver fails with
// the same shapes (the MySQL driver's dial error is a *net.OpError, a lock wait past the deadline a context
// deadline), and only Redis's own failure may switch the reserve to the database.
func FromRedis(err error) error {
	if err == nil {
		return nil
	}
	return &redisCallError{err: err}
}

// IsUnreachable reports whether err holds a Redis call's error (marked by FromRedis) that says the call could
// not reach Redis or Redis cannot serve yet: the connection was refused, reset or closed (EOF), a dial, read
// or write on it failed or timed out, or the server is loading its data or lost its master (LOADING,
// MASTERDOWN, TRYAGAIN). Nothing else is: an error no Redis call marked (a database error), Redis's answers,
// a pool timeout or exhaustion (Redis is serving the connections the pool holds: a flash sale must not switch
// its own gate off), the caller's deadline or cancellation when no connection returned it, and a client that
// this process closed.
func IsUnreachable(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *redisCallError:
		return ConnectionFailed(e.err)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if IsUnreachable(inner) {
				return true
			}
		}
		return false
	case interface{ Unwrap() error }:
		return IsUnreachable(e.Unwrap())
	}
	return false
}

// ConnectionFailed is IsUnreachable's reading of one Redis call's error (unmarked: the caller knows it came
// from Redis, or only asks whether it looks like a connection failure) (see go-redis v9: a dial error is the
// dialer's *net.OpError, also when its DialTimeout passes (it then matches context.DeadlineExceeded too); a
// read or write timeout is a *net.OpError "i/o timeout"; waiting for a pool connection fails with
// ErrPoolTimeout, or with the bare ctx.Err() when the caller's context ends first).
func ConnectionFailed(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller gave up, also in the middle of a dial
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	var operr *net.OpError
	if errors.As(err, &operr) {
		return true // a dial, read or write on the connection failed: refused, reset, unreachable, timed out
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The caller's deadline, and no connection returned it (it passed waiting for the pool, or between
		// retries). context.DeadlineExceeded is itself a net.Error (Timeout), so this comes before that check.
		return false
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// commandsErr is the first error of cmds that is not redis.Nil (a missing key, which the callers read as an
// answer). A pipeline or a MULTI returns its first failed command's error only, and go-redis counts redis.Nil
// as a failure: when an early GET finds its key missing, the errors of the commands after it (a key of the
// wrong type, a command the server refuses) are in those commands alone. Every command is asked.
func commandsErr(cmds ...redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
