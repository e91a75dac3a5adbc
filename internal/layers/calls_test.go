package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// serverStarters are the packages that may call temporaltest.NewServer: internal/sagatest, whose NewServer
// starts the in-process Temporal server again when a port it picked was taken meanwhile (temporaltest alone
// lets gRPC serve a nil listener, which panics in a server goroutine and kills the whole test binary), and the
// bench command, which is no test (sagatest is for tests only) and fails its run at worst.
var serverStarters = []string{"internal/sagatest", "bench"}

// calls returns "file: pkgpath.Func" for each call in the Go source src of a function of the packages in
// funcs (import path → function names), resolving the file's import names.
func calls(t *testing.T, name string, src []byte, funcs map[string][]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	local := map[string]string{} // local name → import path, for the packages in funcs
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := funcs[path]; !ok {
			continue
		}
		n := filepath.Base(path)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = path
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			if path, ok := local[x.Name]; ok && slices.Contains(funcs[path], sel.Sel.Name) {
				out = append(out, fset.Position(call.Pos()).String()+": "+path+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

// TestOnlySagatestStartsTheTemporalTestServer fails when a package's code or tests start temporaltest's
// server directly instead of through sagatest.NewServer.
func TestOnlySagatestStartsTheTemporalTestServer(t *testing.T) {
	funcs := map[string][]string{"go.temporal.io/server/temporaltest": {"NewServer"}}
	found := 0
	for _, p := range listPackages(t) {
		for _, file := range slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles) {
			path := filepath.Join(p.Dir, file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range calls(t, path, src, funcs) {
				found++
				if !slices.Contains(serverStarters, rel(p.ImportPath)) {
					t.Errorf("%s: start the in-process Temporal server with sagatest.NewServer (it retries a start whose "+
						"port was taken; temporaltest alone can kill the test binary)", c)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("found no call of temporaltest.NewServer at all, not even sagatest's: the check reads nothing")
	}
}

// TestCallsResolvesImportNames pins calls: a renamed import is found, another package's NewServer is not.
func TestCallsResolvesImportNames(t *testing.T) {
	funcs := map[string][]string{"go.temporal.io/server/temporaltest": {"NewServer"}}
	src := []byte(`package x
import (
	tt "go.temporal.io/server/temporaltest"
	"example.com/temporaltest"
)
func f() { tt.NewServer(); temporaltest.NewServer(); tt.Other() }
`)
	got := calls(t, "x.go", src, funcs)
	if want := []string{"x.go:6:12: go.temporal.io/server/temporaltest.NewServer"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
