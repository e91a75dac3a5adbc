package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ordersaga/ordersaga/internal/faults"
)

// The store faults the soak draws beside the process faults: the run's Redis restarted without its data or
// stopped for a while, its scripts flushed, and the database connections of the run killed. Their injectors
// are internal/faults' (measured one by one in its tests; RELIABILITY.md).

// redisRestart kills the run's redis-server (SIGKILL: no persistence, every key is lost) and starts it again
// on the same port after down: the stock is cold-loaded from the database, the markers re-marked.
type redisRestart struct {
	t    *topology
	rec  *recorder
	down time.Duration
	name string
}

func (f redisRestart) Name() string { return f.name }

func (f redisRestart) Inject(ctx context.Context) error {
	took, err := killAndRestart(ctx, f.rec, f.Name(), f.t.redisSrv, f.down, func(ctx context.Context) error {
		if err := f.t.redisSrv.start(); err != nil {
			return err
		}
		return waitTCP(ctx, f.t.redis, f.t.redisSrv, 10*time.Second)
	})
	if err != nil {
		return fmt.Errorf("redis restart: %w", err)
	}
	fmt.Fprintf(f.t.log, "chaos: redis killed, back empty after %s\n", took.Round(time.Millisecond))
	return nil
}

// scriptFlush removes every Lua script from the run's Redis (SCRIPT FLUSH): each client's next EVALSHA
// answers NOSCRIPT and must load the script again.
type scriptFlush struct {
	t   *topology
	rec *recorder
}

func (scriptFlush) Name() string { return "redis_script_flush" }

func (f scriptFlush) Inject(ctx context.Context) error {
	if err := f.t.rs.Client().ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("SCRIPT FLUSH: %w", err)
	}
	f.rec.count(f.Name())
	fmt.Fprintln(f.t.log, "chaos: redis SCRIPT FLUSH")
	return nil
}

// mysqlKill kills every connection to the run's database (KILL CONNECTION) but the killer's own: every
// process's pool finds its connections dead in the middle of whatever it was doing.
type mysqlKill struct {
	t   *topology
	rec *recorder
}

func (mysqlKill) Name() string { return "mysql_kill_connections" }

func (f mysqlKill) Inject(ctx context.Context) error {
	cfg, err := mysql.ParseDSN(f.t.adminDSN)
	if err != nil {
		return err
	}
	db, err := sql.Open("mysql", f.t.adminDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := faults.KillConnections(ctx, db, cfg.User, f.t.dbName)
	if err != nil {
		return err
	}
	f.rec.count(f.Name())
	fmt.Fprintf(f.t.log, "chaos: killed %d database connections\n", n)
	return nil
}

// mysqlRestart SIGKILLs the run's own MariaDB server (-own-mysql) and starts it again on its data directory
// after down: every connection dies mid-statement, the transactions in flight roll back, InnoDB recovers what
// committed, and every process must reconnect.
type mysqlRestart struct {
	t    *topology
	rec  *recorder
	down time.Duration
}

func (mysqlRestart) Name() string { return "mysql_restart" }

func (f mysqlRestart) Inject(ctx context.Context) error {
	took, err := killAndRestart(ctx, f.rec, f.Name(), f.t.mysqlSrv, f.down, f.t.restartMySQL)
	if err != nil {
		return fmt.Errorf("mysql restart: %w", err)
	}
	fmt.Fprintf(f.t.log, "chaos: mysql killed and back after %s\n", took.Round(time.Millisecond))
	return nil
}

// storeFaults are the store faults of the soak; the Redis restarts only when the run started its own Redis,
// the MySQL restart only when it started its own MariaDB.
func (r *runState) storeFaults() []fault {
	fs := []fault{scriptFlush{t: r.t, rec: r.rec}, mysqlKill{t: r.t, rec: r.rec}}
	if r.t.redisSrv != nil {
		fs = append(fs,
			redisRestart{t: r.t, rec: r.rec, down: 0, name: "redis_restart"},
			redisRestart{t: r.t, rec: r.rec, down: 10 * time.Second, name: "redis_stop_10s"})
	}
	if r.t.mysqlSrv != nil {
		fs = append(fs, mysqlRestart{t: r.t, rec: r.rec, down: 2 * time.Second})
	}
	return fs
}
