// Command testreport reads `go test -json` and prints what CI's log needs: one line per package (ok, FAIL,
// no test files), the whole output of every test that failed and of every package that did not build, and
// the lines that match -show. With -slowest it reads the saved streams of a run instead and prints its
// slowest tests.
//
//	go test -json ./... | go run ./scripts/testreport -save /tmp/run/embedded.json
//	go run ./scripts/testreport -slowest 10 /tmp/run/*.json
//
// It exits 1 when a test or a package failed, so that `set -o pipefail` sees the failure even if go test's
// own status is lost.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events name the package here
}

func main() {
	save := flag.String("save", "", "also write the stream read from stdin to this file (for -slowest)")
	show := flag.String("show", "", "also print every line a test writes that matches this regular expression")
	slowest := flag.Int("slowest", 0, "print the N slowest tests of the saved streams named as arguments")
	flag.Parse()
	if *slowest > 0 {
		if err := printSlowest(os.Stdout, *slowest, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		return
	}
	var showRE *regexp.Regexp
	if *show != "" {
		re, err := regexp.Compile(*show)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testreport: -show: %v\n", err)
			os.Exit(2)
		}
		showRE = re
	}
	in := io.Reader(os.Stdin)
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	failed, err := report(os.Stdout, in, showRE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// report prints the stream as it arrives and says whether anything failed.
func report(w io.Writer, in io.Reader, show *regexp.Regexp) (failed bool, err error) {
	outputs := map[string][]string{} // package + "\x00" + test -> its output so far
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event (go's own messages): print it as it is.
			fmt.Fprintln(w, string(line))
			continue
		}
		pkg := e.Package
		if pkg == "" {
			pkg = e.ImportPath
		}
		key := pkg + "\x00" + e.Test
		switch e.Action {
		case "output", "build-output":
			outputs[key] = append(outputs[key], e.Output)
			if show != nil && e.Test != "" && show.MatchString(e.Output) {
				fmt.Fprint(w, e.Output)
			}
		case "pass", "skip":
			if e.Test == "" {
				fmt.Fprint(w, packageLine(outputs[key], pkg, e))
			}
			delete(outputs, key)
		case "fail", "build-fail":
			failed = true
			if e.Test != "" {
				fmt.Fprintf(w, "--- FAIL: %s %s (%.2fs)\n", pkg, e.Test, e.Elapsed)
				fmt.Fprint(w, strings.Join(outputs[key], ""))
			} else {
				// The package's own output: a panic, a timeout, a build error, TestMain.
				out := strings.Join(outputs[key], "")
				if out != "" && !strings.HasSuffix(out, "\n") {
					out += "\n"
				}
				fmt.Fprint(w, out)
				if !strings.Contains(out, "FAIL\t") {
					fmt.Fprintf(w, "FAIL\t%s\t%.1fs\n", pkg, e.Elapsed)
				}
			}
			delete(outputs, key)
		}
	}
	return failed, sc.Err()
}

// packageLine is go test's own summary line of a package that passed ("ok", or "?" without test files).
func packageLine(out []string, pkg string, e event) string {
	for i := len(out) - 1; i >= 0; i-- {
		if strings.HasPrefix(out[i], "ok ") || strings.HasPrefix(out[i], "?  ") {
			return out[i]
		}
	}
	return fmt.Sprintf("%s\t%s\t%.1fs\n", e.Action, pkg, e.Elapsed)
}

// timing is one top-level test's run time.
type timing struct {
	pkg, test, run string
	elapsed        float64
}

func printSlowest(w io.Writer, n int, files []string) error {
	var all []timing
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" || strings.Contains(e.Test, "/") {
				continue
			}
			if e.Action == "pass" || e.Action == "fail" {
				all = append(all, timing{pkg: e.Package, test: e.Test, elapsed: e.Elapsed,
					run: strings.TrimSuffix(filepath.Base(name), ".json")})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].elapsed > all[j].elapsed })
	if len(all) > n {
		all = all[:n]
	}
	fmt.Fprintf(w, "the %d slowest tests of this run:\n", len(all))
	for _, t := range all {
		fmt.Fprintf(w, "%8.1fs  %-10s %s %s\n", t.elapsed, t.run, t.pkg, t.test)
	}
	return nil
}
