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

// calls returns "file:line:col: pkgPath.fn" for each call of function fn of package pkgPath in the Go source
// src, resolving the file's import names.
func calls(t *testing.T, name string, src []byte, pkgPath, fn string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	local := map[string]bool{} // the names the file gives pkgPath
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path != pkgPath {
			continue
		}
		if imp.Name != nil {
			local[imp.Name.Name] = true
		} else {
			local[filepath.Base(pkgPath)] = true
		}
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
		if x, ok := sel.X.(*ast.Ident); ok && local[x.Name] && sel.Sel.Name == fn {
			out = append(out, fset.Position(call.Pos()).String()+": "+pkgPath+"."+fn)
		}
		return true
	})
	return out
}

// TestOnlySagatestStartsTheTemporalTestServer fails when a package's code or tests start temporaltest's
// server directly instead of through sagatest.NewServer.
func TestOnlySagatestStartsTheTemporalTestServer(t *testing.T) {
	found := 0
	for _, p := range listPackages(t) {
		for _, file := range slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles) {
			path := filepath.Join(p.Dir, file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range calls(t, path, src, "go.temporal.io/server/temporaltest", "NewServer") {
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
	src := []byte(`package x
import (
	tt "go.temporal.io/server/temporaltest"
	"example.com/temporaltest"
)
func f() { tt.NewServer(); temporaltest.NewServer(); tt.Other() }
`)
	got := calls(t, "x.go", src, "go.temporal.io/server/temporaltest", "NewServer")
	if want := []string{"x.go:6:12: go.temporal.io/server/temporaltest.NewServer"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
