package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/workflows"
)

// localTemporal is how a file-backed in-process Temporal server of the benchmark is configured: the local
// stack's (internal/devserver) or a candidate.
type localTemporal struct {
	// WAL puts the server's SQLite file in WAL mode with synchronous=NORMAL (the local stack leaves SQLite's
	// defaults: a rollback journal and synchronous=FULL, an fsync per transaction).
	WAL bool
	// ForceSARefresh is the local stack's dynamic config that rereads the search attributes from the
	// database on every use.
	ForceSARefresh bool
}

// startTemporal runs a file-backed Temporal server in this process: devserver.StartTemporal itself for the
// local stack's configuration, else the same configuration (copied from internal/devserver) with the
// candidate's changes. It returns the frontend address and a stop function.
func startTemporal(ctx context.Context, dir string, lt localTemporal, namespace string) (string, func(), error) {
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		return "", nil, err
	}
	dbFile := filepath.Join(dir, "temporal-"+randomID()+".db")
	if !lt.WAL && lt.ForceSARefresh {
		t, err := devserver.StartTemporal(ctx, devserver.TemporalOptions{IP: "127.0.0.1", FrontendPort: port, DBFile: dbFile,
			Namespace: namespace, SearchAttributes: workflows.SearchAttributes()})
		if err != nil {
			return "", nil, err
		}
		return t.Address(), func() { _ = t.Stop() }, nil
	}
	sqlConf := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: dbFile,
		ConnectAttributes: map[string]string{"mode": "rwc"}}
	if lt.WAL {
		sqlConf.ConnectAttributes["journal_mode"] = "wal"
		sqlConf.ConnectAttributes["synchronous"] = "normal"
	}
	schemaConf := *sqlConf
	if err := sqliteschema.SetupSchema(&schemaConf); err != nil {
		return "", nil, fmt.Errorf("temporal schema: %w", err)
	}
	ns, err := sqliteschema.NewNamespaceConfig("active", namespace, false, workflows.SearchAttributes())
	if err != nil {
		return "", nil, err
	}
	if err := sqliteschema.CreateNamespaces(sqlConf, ns); err != nil {
		return "", nil, err
	}
	frontend := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10, MasterClusterName: "active", CurrentClusterName: "active",
		ClusterInformation: map[string]cluster.ClusterInformation{"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, svc := range []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		p := port
		if svc != primitives.FrontendService {
			if p, err = devserver.FreePort("127.0.0.1"); err != nil {
				return "", nil, err
			}
		}
		rpc := config.RPC{GRPCPort: p, BindOnIP: "127.0.0.1"}
		if svc == primitives.FrontendService {
			hp, err := devserver.FreePort("127.0.0.1")
			if err != nil {
				return "", nil, err
			}
			rpc.HTTPPort = hp
		}
		conf.Services[string(svc)] = config.Service{RPC: rpc}
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	logger := log.NewNoopLogger()
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return "", nil, err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return "", nil, err
	}
	dc := dynamicconfig.StaticClient{dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100}
	if lt.ForceSARefresh {
		dc[dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key()] = true
	}
	srv, err := temporal.NewServer(temporal.WithConfig(conf), temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts), temporal.WithLogger(logger), temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dc))
	if err != nil {
		return "", nil, err
	}
	if err := srv.Start(); err != nil {
		return "", nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", frontend, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = srv.Stop()
			return "", nil, fmt.Errorf("temporal frontend %s: %w", frontend, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return frontend, func() { _ = srv.Stop() }, nil
}
