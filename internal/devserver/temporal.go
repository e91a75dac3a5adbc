package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	persql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/common/resolver"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

// TemporalOptions configure an in-process Temporal server.
type TemporalOptions struct {
	// IP is the address every service binds to (127.0.0.1 keeps it off the network).
	IP string
	// FrontendPort is the gRPC port clients dial.
	FrontendPort int
	// DBFile is the SQLite file that persists the server's state; empty runs in memory (lost at exit).
	DBFile string
	// Namespace is created (with SearchAttributes) before the server serves, if it does not exist yet.
	Namespace        string
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger

	// The two settings below restore what the local stack did before it was measured (BENCHMARKS.md): the
	// benchmark sets them to show what their removal bought; nothing else should.

	// RollbackJournal leaves DBFile in SQLite's default rollback-journal mode with synchronous=FULL (an fsync
	// per transaction) instead of WAL with synchronous=NORMAL (an fsync per checkpoint; a process crash loses
	// nothing, a power cut may lose the last transactions).
	RollbackJournal bool
	// ForceSearchAttributesRefresh rereads the search attributes from the database on every use instead of
	// the server's cache. Not needed: SearchAttributes are registered before the server serves.
	ForceSearchAttributesRefresh bool
	// AllVisibilityIndexes keeps every index of the server's visibility table, instead of dropping those that
	// serve no query of the local stack (dropVisibilityIndexes).
	AllVisibilityIndexes bool
}

// The server's visibility table (SQLite) has 58 indexes, and every visibility write (a workflow's start, each
// search-attribute upsert, its close) rewrites an entry in each. The local stack drops those that serve no
// query it makes (orders are found by workflow ID, type, status and the search attributes it registers): 123-138 %
// of the accepted orders per second against every index kept (BENCHMARKS.md, pair 3). A query on a dropped
// index's column still answers, by scanning the namespace's rows.

// unusedVisibilityIndexes are indexes of system columns that the local stack never queries by.
var unusedVisibilityIndexes = []string{
	"by_history_length", "by_history_size_bytes", "by_execution_duration", "by_state_transition_count",
	"by_parent_workflow_id", "by_parent_run_id", "by_root_workflow_id", "by_root_run_id", "by_batcher_user",
	"by_temporal_pause_info", "by_temporal_worker_deployment_version", "by_temporal_workflow_versioning_behavior",
	"by_temporal_worker_deployment", "by_temporal_bool_01", "by_temporal_bool_02", "by_temporal_datetime_01",
	"by_temporal_datetime_02", "by_temporal_double_01", "by_temporal_double_02", "by_temporal_int_01",
	"by_temporal_int_02", "by_temporal_keyword_01", "by_temporal_keyword_02", "by_temporal_keyword_03",
	"by_temporal_keyword_04", "by_temporal_low_cardinality_keyword_01",
}

// customColumnIndexes are the indexes of the columns that custom search attributes of each type map to: the
// columns of a type that no registered attribute has are never queried.
var customColumnIndexes = map[enumspb.IndexedValueType]struct {
	prefix string
	n      int
}{
	enumspb.INDEXED_VALUE_TYPE_BOOL:     {"by_bool_", 3},
	enumspb.INDEXED_VALUE_TYPE_DATETIME: {"by_datetime_", 3},
	enumspb.INDEXED_VALUE_TYPE_DOUBLE:   {"by_double_", 3},
	enumspb.INDEXED_VALUE_TYPE_INT:      {"by_int_", 3},
	enumspb.INDEXED_VALUE_TYPE_KEYWORD:  {"by_keyword_", 10},
}

// dropVisibilityIndexes drops the visibility indexes that no query of the local stack uses (see above); it is
// idempotent, and runs at every start.
func dropVisibilityIndexes(conf *config.SQL, attrs map[string]enumspb.IndexedValueType) error {
	drop := slices.Clone(unusedVisibilityIndexes)
	registered := map[enumspb.IndexedValueType]bool{}
	for _, typ := range attrs {
		registered[typ] = true
	}
	for typ, cols := range customColumnIndexes {
		if registered[typ] {
			continue
		}
		for i := 1; i <= cols.n; i++ {
			drop = append(drop, fmt.Sprintf("%s%02d", cols.prefix, i))
		}
	}
	db, err := persql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("start temporal: %w", err)
	}
	defer db.Close()
	for _, name := range drop {
		if err := db.Exec("DROP INDEX IF EXISTS " + name); err != nil {
			return fmt.Errorf("start temporal: drop index %s: %w", name, err)
		}
	}
	return nil
}

// Temporal is a running in-process Temporal server.
type Temporal struct {
	srv    temporal.Server
	addr   string
	logger slogLogger
}

// StartTemporal sets up the schema on first use of DBFile, creates the namespace, and starts the server. It
// returns once the frontend accepts connections.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	if opts.IP == "" || opts.FrontendPort == 0 || opts.Namespace == "" {
		return nil, errors.New("start temporal: IP, FrontendPort and Namespace are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sqlConf, err := sqlConfig(opts.DBFile, !opts.RollbackJournal)
	if err != nil {
		return nil, err
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("start temporal: namespace %s: %w", opts.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(sqlConf, ns); err != nil {
		return nil, fmt.Errorf("start temporal: create namespace %s: %w", opts.Namespace, err)
	}
	if !opts.AllVisibilityIndexes {
		if err := dropVisibilityIndexes(sqlConf, opts.SearchAttributes); err != nil {
			return nil, err
		}
	}

	conf, hosts, err := serverConfig(opts, sqlConf)
	if err != nil {
		return nil, err
	}
	logger := newServerLogger(opts.Logger)
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("start temporal: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("start temporal: claim mapper: %w", err)
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static hosts instead of ringpop: one process needs no membership protocol, and it starts faster.
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig(opts)),
	)
	if err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	t := &Temporal{srv: srv, addr: HostPort(opts.IP, opts.FrontendPort), logger: logger}
	if err := waitTCP(ctx, t.addr, 30*time.Second); err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("start temporal: frontend: %w", err)
	}
	return t, nil
}

// Address is the frontend's host:port, for TEMPORAL_ADDRESS.
func (t *Temporal) Address() string { return t.addr }

// Stop stops every service of the server; the SQLite file keeps what it persisted.
func (t *Temporal) Stop() error {
	t.logger.quiet.Store(true)
	return t.srv.Stop()
}

// sqlConfig is the persistence configuration; a new file gets the server's schema first. The schema is
// written to a temporary file that is renamed into place, so a first start interrupted halfway leaves no
// half-initialised database behind.
func sqlConfig(dbFile string, wal bool) (*config.SQL, error) {
	if dbFile == "" {
		return &config.SQL{
			PluginName: sqliteplugin.PluginName,
			// Shared cache: every service of the server sees the same in-memory database.
			ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
			DatabaseName:      "temporal-" + strconv.Itoa(rand.IntN(1<<30)),
		}, nil
	}
	conf := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		ConnectAttributes: map[string]string{"mode": "rwc"},
		DatabaseName:      dbFile,
	}
	if wal {
		// Measured: about twice the orders per second of the rollback journal on this machine, more when
		// other work writes to the same disk (every transaction's fsync queued behind it).
		conf.ConnectAttributes["journal_mode"] = "wal"
		conf.ConnectAttributes["synchronous"] = "normal"
	}
	if _, err := os.Stat(dbFile); err == nil {
		return conf, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dbFile), 0o755); err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	tmp := dbFile + ".init"
	_ = os.Remove(tmp)
	tmpConf := *conf
	tmpConf.DatabaseName = tmp
	// The schema is written in the default journal mode, so the renamed file has no -wal file beside it.
	tmpConf.ConnectAttributes = map[string]string{"mode": "rwc"}
	if err := sqliteschema.SetupSchema(&tmpConf); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("start temporal: set up schema in %s: %w", dbFile, err)
	}
	if err := os.Rename(tmp, dbFile); err != nil {
		return nil, fmt.Errorf("start temporal: %w", err)
	}
	return conf, nil
}

// dynamicConfig is the server's dynamic configuration.
func dynamicConfig(opts TemporalOptions) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// New tasks go to one partition of each task queue: on one host, more only add forwarding between them.
		// With the server's default of 4, a workflow task that found no poller on its partition waited in that
		// partition's backlog for a poll forwarded from another (at most 10 forwards a second, one at a time),
		// and 64 concurrent orders stalled the accepted path for 4-5 s at a time (BENCHMARKS.md, pair 5). Polls
		// still read all 4, so tasks that a data directory's earlier runs left on the others are not stranded.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  4,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
	if opts.ForceSearchAttributesRefresh {
		dc[dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key()] = true
	}
	return dc
}

func serverConfig(opts TemporalOptions, sqlConf *config.SQL) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	frontend := HostPort(opts.IP, opts.FrontendPort)
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = opts.IP
	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, svc := range []primitives.ServiceName{
		primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService,
	} {
		port, err := FreePort(opts.IP)
		if err != nil {
			return nil, nil, fmt.Errorf("start temporal: %w", err)
		}
		rpc := config.RPC{GRPCPort: port, BindOnIP: opts.IP}
		if svc == primitives.FrontendService {
			// The frontend's HTTP API (and Nexus) on a port of its own choosing; gRPC where clients dial.
			rpc.HTTPPort, rpc.GRPCPort = port, opts.FrontendPort
			port = opts.FrontendPort
		}
		conf.Services[string(svc)] = config.Service{RPC: rpc}
		hosts[svc] = static.SingleLocalHost(HostPort(opts.IP, port))
	}
	return conf, hosts, nil
}
