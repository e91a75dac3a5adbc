package config

import (
	"maps"
	"slices"
)

// The processes that read the environment (the local stack runs both and reads every variable).
const (
	Worker  = "worker"
	Starter = "starter"
)

// readers says which process uses each variable FromEnv reads: where a deployment sets it. A variable set
// on a process that does not use it is ignored there (deploy/compose_test.go keeps the compose file to this).
var readers = map[string][]string{
	"TEMPORAL_ADDRESS":         {Worker, Starter},
	"TEMPORAL_NAMESPACE":       {Worker, Starter},
	"TEMPORAL_TLS":             {Worker, Starter},
	"TEMPORAL_TLS_CA":          {Worker, Starter},
	"TEMPORAL_TLS_CERT":        {Worker, Starter},
	"TEMPORAL_TLS_KEY":         {Worker, Starter},
	"TEMPORAL_TLS_SERVER_NAME": {Worker, Starter},
	"TEMPORAL_API_KEY":         {Worker, Starter},
	"REDIS_ADDR":               {Worker, Starter},
	"REDIS_CLUSTER_ADDRS":      {Worker, Starter},
	"REDIS_SENTINEL_ADDRS":     {Worker, Starter},
	"REDIS_SENTINEL_MASTER":    {Worker, Starter},
	"REDIS_SENTINEL_PASSWORD":  {Worker, Starter},
	"REDIS_USERNAME":           {Worker, Starter},
	"REDIS_PASSWORD":           {Worker, Starter},
	"REDIS_TLS":                {Worker, Starter},
	"REDIS_TLS_CA_FILE":        {Worker, Starter},
	"REDIS_TLS_SERVER_NAME":    {Worker, Starter},
	"REDIS_KEY_PREFIX":         {Worker, Starter},
	"REDIS_MARKER_REPLICAS":    {Starter}, // the order API writes the idempotency markers
	"REDIS_POOL_SIZE":          {Worker, Starter},
	"MYSQL_DSN":                {Worker, Starter},
	"SQLITE_PATH":              {Worker, Starter},
	"MYSQL_MAX_OPEN_CONNS":     {Worker, Starter},
	"MYSQL_MAX_IDLE_CONNS":     {Worker, Starter},
	"MYSQL_CONN_MAX_LIFETIME":  {Worker, Starter},
	"LOG_FORMAT":               {Worker, Starter},
	"LOG_LEVEL":                {Worker, Starter},

	"OTEL_EXPORTER_OTLP_ENDPOINT":        {Worker, Starter},
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": {Worker, Starter},
	"OTEL_EXPORTER_OTLP_PROTOCOL":        {Worker, Starter},
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": {Worker, Starter},
	"TRACES_FILE":                        {Worker, Starter},
	// The worker runs the activities: their concurrency, the reserve's fallback and its own metrics.
	"WORKER_CONCURRENCY":                {Worker},
	"WORKER_LOCAL_ACTIVITY_CONCURRENCY": {Worker},
	"RESERVE_DB_FALLBACK":               {Worker, Starter}, // the worker's reserve, the API's placement
	"METRICS_ADDR":                      {Worker},
	// The worker sends the refunds (its sender's Schedule); the starter's reconciliation judges the unsent.
	"REFUND_PROVIDER_URL":     {Worker},
	"REFUND_PROVIDER_SECRET":  {Worker},
	"REFUND_PROVIDER_TIMEOUT": {Worker},
	"REFUND_SEND_INTERVAL":    {Worker},
	"REFUND_UNSENT_AFTER":     {Starter},
	// The starter serves the API and puts the rest into workflow inputs and the Schedules it creates.
	"HTTP_ADDR":              {Starter},
	"ADMIN_ADDR":             {Starter},
	"PAYMENT_WEBHOOK_SECRET": {Starter},
	"ADMIN_TOKEN":            {Starter},
	"CALLER_IDENTITY":        {Starter},
	"CALLER_TOKEN_SECRET":    {Starter},
	"ORDER_PAYMENT_TIMEOUT":  {Starter},
	"CURRENCY":               {Starter},
	"IDEMPOTENCY_RETENTION":  {Starter},
	"PLACE_CONCURRENCY":      {Starter},
	"PLACE_PER_SKU":          {Starter},
	"LINE_GRACE":             {Starter},
	"PLACE_QUEUE":            {Starter}, // refused at start-up: the line replaced its queue
	"RECONCILE_INTERVAL":     {Starter},
	"RECONCILE_BATCH":        {Starter},
	"RECONCILE_GRACE":        {Starter},
}

// ReadBy reports whether process (Worker or Starter) uses the variable.
func ReadBy(process, variable string) bool { return slices.Contains(readers[variable], process) }

// Readers returns the processes that use the variable (none for a variable FromEnv does not read).
func Readers(variable string) []string { return slices.Clone(readers[variable]) }

// Variables returns every variable FromEnv reads, sorted.
func Variables() []string { return slices.Sorted(maps.Keys(readers)) }
