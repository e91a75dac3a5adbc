package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it: one package passes, one has a failing test beside a passing one, one
// does not build.
const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestFast"}
{"Action":"output","Package":"example.com/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"output","Package":"example.com/a","Test":"TestFast","Output":"FIGURE fast 3\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestFast","Elapsed":0.5}
{"Action":"output","Package":"example.com/a","Output":"ok  \texample.com/a\t0.6s\n"}
{"Action":"pass","Package":"example.com/a","Elapsed":0.6}
{"Action":"run","Package":"example.com/b","Test":"TestGood"}
{"Action":"output","Package":"example.com/b","Test":"TestGood","Output":"quiet line of a passing test\n"}
{"Action":"pass","Package":"example.com/b","Test":"TestGood","Elapsed":12}
{"Action":"run","Package":"example.com/b","Test":"TestBad"}
{"Action":"output","Package":"example.com/b","Test":"TestBad","Output":"    bad_test.go:9: 2 units oversold\n"}
{"Action":"fail","Package":"example.com/b","Test":"TestBad","Elapsed":7.25}
{"Action":"output","Package":"example.com/b","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/b","Elapsed":19.5}
{"ImportPath":"example.com/c [example.com/c.test]","Action":"build-output","Output":"c.go:3:1: syntax error\n"}
{"ImportPath":"example.com/c [example.com/c.test]","Action":"build-fail"}
`

func TestReport_PrintsFailuresWithTheirOutputAndFails(t *testing.T) {
	var out strings.Builder
	failed, err := report(&out, strings.NewReader(stream), regexp.MustCompile(`^FIGURE`))
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a stream with a failing test and a package that does not build reported no failure")
	}
	got := out.String()
	for _, want := range []string{
		"ok  \texample.com/a\t0.6s\n",     // go's own line for a package that passed
		"FIGURE fast 3\n",                 // -show
		"--- FAIL: example.com/b TestBad", // the failing test, named with its package
		"bad_test.go:9: 2 units oversold", // and its output
		"FAIL\texample.com/b\t19.5s",      // the package's verdict
		"c.go:3:1: syntax error",          // the build error
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q; it printed:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet line of a passing test") {
		t.Errorf("report printed the output of a passing test:\n%s", got)
	}
}

func TestReport_PassingStreamIsNotAFailure(t *testing.T) {
	var out strings.Builder
	pass := strings.Join(strings.Split(stream, "\n")[:7], "\n")
	failed, err := report(&out, strings.NewReader(pass), nil)
	if err != nil || failed {
		t.Fatalf("failed=%v err=%v for a stream where everything passed:\n%s", failed, err, out.String())
	}
}

func TestSlowest_OrdersTopLevelTestsAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "embedded.json"), []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	other := `{"Action":"pass","Package":"example.com/d","Test":"TestSlow","Elapsed":30}
{"Action":"pass","Package":"example.com/d","Test":"TestSlow/sub","Elapsed":29}
`
	if err := os.WriteFile(filepath.Join(dir, "real.json"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printSlowest(&out, 2, []string{filepath.Join(dir, "embedded.json"), filepath.Join(dir, "real.json")}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "real") || !strings.Contains(lines[1], "TestSlow") ||
		!strings.Contains(lines[2], "TestGood") {
		t.Errorf("want TestSlow (real) then TestGood, subtests left out; got:\n%s", out.String())
	}
}
