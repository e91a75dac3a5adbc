package main

import (
	"context"
	"path/filepath"

	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/workflows"
)

// startTemporal runs a file-backed Temporal server in this process as the local stack does
// (devserver.StartTemporal), with the settings of lt: the zero value is the local stack's configuration,
// RollbackJournal, ForceSearchAttributesRefresh and AllVisibilityIndexes put back what it did before it was
// measured. It returns
// the frontend address and a stop function.
func startTemporal(ctx context.Context, dir string, lt devserver.TemporalOptions, namespace string) (string, func(), error) {
	port, err := devserver.FreePort("127.0.0.1")
	if err != nil {
		return "", nil, err
	}
	lt.IP, lt.FrontendPort, lt.Namespace = "127.0.0.1", port, namespace
	lt.DBFile = filepath.Join(dir, "temporal-"+randomID()+".db")
	lt.SearchAttributes = workflows.SearchAttributes()
	t, err := devserver.StartTemporal(ctx, lt)
	if err != nil {
		return "", nil, err
	}
	return t.Address(), func() { _ = t.Stop() }, nil
}
