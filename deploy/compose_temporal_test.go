package deploy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"

	"github.com/ordersaga/ordersaga/workflows"
)

// fakeTemporalCLI plays `temporal operator …` for setup-namespace.sh, keeping its state in $FAKE_STATE:
// every call is logged ("ok KEY" or "fail KEY" after the arguments); each distinct call (its words and
// --name) fails its first $FAKE_FAILURES times, as a frontend that is not serving yet does; with
// FAKE_LOST_REPLY=1 the first create of each thing takes effect but reports a failure, as a reply lost on
// the way back does. A create of something that exists fails, as the real CLI's does.
const fakeTemporalCLI = `#!/bin/sh
set -u
s="$FAKE_STATE"
words="$1-$2-$3"
shift 3
ns="" name="" type=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--namespace) ns=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --type) type=$2; shift 2 ;;
    --retention|--command-timeout|--address) shift 2 ;;
    *) echo "fake temporal: unexpected argument $1" >&2; exit 2 ;;
  esac
done
key="$words${name:+-$name}"
n=$(cat "$s/count-$key" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$s/count-$key"
if [ "$n" -le "${FAKE_FAILURES:-0}" ]; then
  echo "fail $key" >> "$s/calls"
  echo "fake temporal: $key: Unavailable" >&2
  exit 1
fi
lost() {
  if [ "${FAKE_LOST_REPLY:-0}" = 1 ] && [ ! -f "$s/lost-$key" ]; then
    : > "$s/lost-$key"
    echo "fail $key (applied, reply lost)" >> "$s/calls"
    exit 1
  fi
}
case "$words" in
  operator-cluster-health) echo SERVING ;;
  operator-namespace-describe)
    [ -f "$s/ns-$ns" ] || { echo "fail $key" >> "$s/calls"; echo "Namespace $ns is not found" >&2; exit 1; } ;;
  operator-namespace-create)
    if [ -f "$s/ns-$ns" ]; then echo "fail $key" >> "$s/calls"; echo "Namespace already exists" >&2; exit 1; fi
    : > "$s/ns-$ns"
    echo "namespace $ns" >> "$s/created"
    lost ;;
  operator-search-attribute-list)
    [ -f "$s/ns-$ns" ] || { echo "fail $key" >> "$s/calls"; echo "Namespace $ns is not found" >&2; exit 1; }
    echo "  Name  Type"
    cat "$s/sa-$ns" 2>/dev/null || true ;;
  operator-search-attribute-create)
    [ -f "$s/ns-$ns" ] || { echo "fail $key" >> "$s/calls"; exit 1; }
    if grep -q "^  $name " "$s/sa-$ns" 2>/dev/null; then echo "fail $key" >> "$s/calls"; echo "Search attribute $name already exists" >&2; exit 1; fi
    echo "  $name  $type" >> "$s/sa-$ns"
    echo "search-attribute $name $type" >> "$s/created"
    lost ;;
  *) echo "fake temporal: unknown command $words" >&2; exit 2 ;;
esac
echo "ok $key" >> "$s/calls"
`

type setupRun struct {
	err     error
	stderr  string
	took    time.Duration
	created []string // "namespace NS", "search-attribute NAME TYPE", in order
	calls   []string
}

// runNamespaceSetup runs deploy/temporal/setup-namespace.sh with the fake CLI first on PATH.
func runNamespaceSetup(t *testing.T, state string, env ...string) setupRun {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "temporal"), []byte(fakeTemporalCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join("temporal", "setup-namespace.sh"))
	cmd.Env = append([]string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TEMPORAL_ADDRESS=temporal:7233", "TEMPORAL_NAMESPACE=default", "FAKE_STATE=" + state,
		"TEMPORAL_SETUP_RETRY_SECONDS=0",
	}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	r := setupRun{err: err, stderr: stderr.String(), took: time.Since(start)}
	lines := func(name string) []string {
		b, _ := os.ReadFile(filepath.Join(state, name))
		return slices.DeleteFunc(strings.Split(string(b), "\n"), func(l string) bool { return l == "" })
	}
	r.created, r.calls = lines("created"), lines("calls")
	return r
}

// wantCreated is what the setup must create on an empty cluster: the namespace, then every attribute of
// workflows.SearchAttributes with its type, each once.
func wantCreated(t *testing.T) []string {
	t.Helper()
	names := map[enumspb.IndexedValueType]string{
		enumspb.INDEXED_VALUE_TYPE_KEYWORD: "Keyword", enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST: "KeywordList",
		enumspb.INDEXED_VALUE_TYPE_DATETIME: "Datetime", enumspb.INDEXED_VALUE_TYPE_INT: "Int",
		enumspb.INDEXED_VALUE_TYPE_DOUBLE: "Double", enumspb.INDEXED_VALUE_TYPE_BOOL: "Bool",
		enumspb.INDEXED_VALUE_TYPE_TEXT: "Text",
	}
	var want []string
	for name, typ := range workflows.SearchAttributes() {
		if names[typ] == "" {
			t.Fatalf("search attribute %s: type %v has no CLI name here", name, typ)
		}
		want = append(want, "search-attribute "+name+" "+names[typ])
	}
	slices.Sort(want)
	return append([]string{"namespace default"}, want...)
}

func sortedAfterFirst(s []string) []string {
	if len(s) == 0 {
		return s
	}
	rest := slices.Clone(s[1:])
	slices.Sort(rest)
	return append([]string{s[0]}, rest...)
}

// TestTemporalNamespaceSetupRetriesEachStep: the one-shot waits until the frontend answers an RPC, then
// retries each step until it is done or found done, so a slow or flapping frontend neither fails it (a
// failed one-shot leaves the worker and the starter never started) nor creates anything twice.
func TestTemporalNamespaceSetupRetriesEachStep(t *testing.T) {
	t.Parallel()
	want := wantCreated(t)
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"every call fails twice first: each step is retried", []string{"FAKE_FAILURES=2"}},
		{"a create's reply is lost: the retry finds it done", []string{"FAKE_LOST_REPLY=1"}},
		{"a healthy frontend: each step runs once", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runNamespaceSetup(t, t.TempDir(), tc.env...)
			if r.err != nil {
				t.Fatalf("setup-namespace.sh: %v\n%s", r.err, r.stderr)
			}
			if got := sortedAfterFirst(r.created); !slices.Equal(got, want) {
				t.Errorf("created %q, want %q", got, want)
			}
			served := slices.Index(r.calls, "ok operator-cluster-health")
			firstCreate := slices.IndexFunc(r.calls, func(c string) bool { return strings.Contains(c, "-create") })
			if served < 0 || firstCreate < served {
				t.Errorf("a create was tried before the frontend served (calls %q)", r.calls)
			}
		})
	}
	t.Run("already set up: nothing is created again", func(t *testing.T) {
		t.Parallel()
		state := t.TempDir()
		if r := runNamespaceSetup(t, state); r.err != nil {
			t.Fatalf("first run: %v\n%s", r.err, r.stderr)
		}
		if err := os.Remove(filepath.Join(state, "created")); err != nil {
			t.Fatal(err)
		}
		r := runNamespaceSetup(t, state)
		if r.err != nil || len(r.created) != 0 {
			t.Errorf("second run: err %v, created %q, want nothing\n%s", r.err, r.created, r.stderr)
		}
	})
}

// TestTemporalNamespaceSetupGivesUpAtItsBound: a frontend that never serves fails the one-shot at its bound,
// naming what it waited for, instead of holding `docker compose up` forever.
func TestTemporalNamespaceSetupGivesUpAtItsBound(t *testing.T) {
	t.Parallel()
	r := runNamespaceSetup(t, t.TempDir(), "FAKE_FAILURES=1000000", "TEMPORAL_SETUP_TIMEOUT=2", "TEMPORAL_SETUP_RETRY_SECONDS=1")
	if r.err == nil {
		t.Fatal("setup-namespace.sh succeeded against a frontend that never serves")
	}
	if r.took > 20*time.Second {
		t.Errorf("gave up after %v with a bound of 2 s", r.took)
	}
	if !strings.Contains(r.stderr, "temporal:7233") || len(r.created) != 0 {
		t.Errorf("stderr %q does not name the frontend it waited for, or something was created (%q)", r.stderr, r.created)
	}
}

// TestTemporalNamespaceSetupIsBoundedInCompose: the one-shot's bound is set, and no restart policy stands in
// for its retries (a dependent's wait ends at the first exit, whatever restarts later).
func TestTemporalNamespaceSetupIsBoundedInCompose(t *testing.T) {
	t.Parallel()
	svc := loadCompose(t).Services["temporal-namespace"]
	if env := environment(svc); env["TEMPORAL_SETUP_TIMEOUT"] == "" {
		t.Error("temporal-namespace: TEMPORAL_SETUP_TIMEOUT is not set: say how long it retries")
	}
	if svc.Restart != "" && svc.Restart != types.RestartPolicyNo {
		t.Errorf("temporal-namespace: restart %q: the worker and the starter stop waiting at its first exit; retry inside", svc.Restart)
	}
}

// temporalDynamicConfig loads deploy/temporal/dynamicconfig.yaml with the server's own parser and settings.
func temporalDynamicConfig(t *testing.T) *dynamicconfig.Collection {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("temporal", "dynamicconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lr := dynamicconfig.LoadYamlFile(b)
	for _, e := range append(lr.Errors, lr.Warnings...) {
		t.Errorf("deploy/temporal/dynamicconfig.yaml: %v", e)
	}
	if len(lr.Map) == 0 {
		t.Fatal("deploy/temporal/dynamicconfig.yaml sets nothing")
	}
	client := dynamicconfig.StaticClient{}
	for k, v := range lr.Map {
		client[k] = v
	}
	return dynamicconfig.NewCollection(client, log.NewNoopLogger())
}

func TestTemporalDynamicConfigIsKnownToTheServer(t *testing.T) {
	t.Parallel()
	temporalDynamicConfig(t)
}

// TestTemporalFrontendRPSAdmitsTheNamespaceRPS: a request passes both the frontend's per-instance limit
// (frontend.rps, all namespaces) and its namespace's; a namespace limit above the instance's buys nothing.
func TestTemporalFrontendRPSAdmitsTheNamespaceRPS(t *testing.T) {
	t.Parallel()
	dc := temporalDynamicConfig(t)
	ns := environment(loadCompose(t).Services["worker"])["TEMPORAL_NAMESPACE"]
	instance := dynamicconfig.FrontendRPS.Get(dc)()
	perNS := dynamicconfig.FrontendMaxNamespaceRPSPerInstance.Get(dc)(ns)
	visibility := dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Get(dc)(ns)
	if instance < perNS+visibility {
		t.Errorf("frontend.rps %d is below namespace %q's frontend.namespaceRPS %d + frontend.namespaceRPS.visibility %d: the instance limit caps it",
			instance, ns, perNS, visibility)
	}
}
