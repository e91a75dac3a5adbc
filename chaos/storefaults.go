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

// storeFaults are the store faults of the soak; the Redis restarts only when the run started its own Redis,
// the master kills only when it started its own Redis Cluster (-redis-cluster), the MySQL restart only when it
// started its own MariaDB.
func (r *runState) storeFaults() []fault {
	fs := []fault{scriptFlush{t: r.t, rec: r.rec}, mysqlKill{t: r.t, rec: r.rec}}
	if r.t.cluster != nil {
		fs = append(fs, r.clusterFaultList()...)
	}
	if r.t.redisSrv != nil {
		// SIGKILL: no persistence, every key is lost; the stock is cold-loaded from the database again.
		redis := serverRestart{rec: r.rec, kind: "redis_restart", what: "redis (back empty)", p: r.t.redisSrv,
			restart: r.t.restartRedis, log: r.log}
		stop := redis
		stop.kind, stop.down = "redis_stop_10s", 10*time.Second
		fs = append(fs, redis, stop)
	}
	if r.t.mysqlSrv != nil {
		// Every connection dies mid-statement, the transactions in flight roll back, InnoDB recovers what
		// committed, and every process must reconnect.
		fs = append(fs, serverRestart{rec: r.rec, kind: "mysql_restart", what: "mysql", p: r.t.mysqlSrv,
			down: 2 * time.Second, restart: r.t.restartMySQL, log: r.log})
	}
	return fs
}
