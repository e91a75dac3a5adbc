package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/ordersaga/ordersaga/internal/config"
)

// mainEnv makes the test binary run the command's main instead of the tests: the README test starts the
// local stack as a process of its own without a second build.
const mainEnv = "ORDERSAGA_LOCALSTACK_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The README's two commands, which the first code block must be.
const (
	runCommand  = "go run ./localstack"
	testCommand = "go test ./..."
)

// configurationDoc holds the configuration table, which the README links to.
const configurationDoc = "docs/configuration.md"

// readme is a Markdown document of the repository: its path from the root and its text.
type readme struct {
	path string
	text string
}

func readREADME(t *testing.T) readme {
	t.Helper()
	return readDoc(t, "README.md")
}

// readDoc reads a document by its slash-separated path from the repository's root.
func readDoc(t *testing.T, name string) readme {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return readme{path: name, text: string(b)}
}

// section returns the text from the "## title" heading to the next "## " heading.
func (r readme) section(t *testing.T, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(r.text, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", r.path, title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

func shBlocks(text string) []string {
	var out []string
	for _, m := range shBlock.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// step is one shell command of the tour and what its output must contain.
type step struct {
	cmd    string
	expect []string
}

// steps splits code blocks into commands (continuation lines ending in \ or | joined) and their "# =>"
// expectations.
func steps(blocks []string) []step {
	var out []step
	for _, b := range blocks {
		var cur []string
		for _, line := range strings.Split(b, "\n") {
			trimmed := strings.TrimSpace(line)
			if len(cur) == 0 {
				if exp, ok := strings.CutPrefix(trimmed, "# =>"); ok && len(out) > 0 {
					out[len(out)-1].expect = append(out[len(out)-1].expect, strings.TrimSpace(exp))
					continue
				}
				if trimmed == "" || strings.HasPrefix(trimmed, "#") {
					continue
				}
			}
			cur = append(cur, line)
			if !strings.HasSuffix(trimmed, `\`) && !strings.HasSuffix(trimmed, "|") {
				out = append(out, step{cmd: strings.Join(cur, "\n")})
				cur = nil
			}
		}
	}
	return out
}

// TestREADMEQuickStart runs the README's run command and its five-minute tour as written, with four
// substitutions: the local stack and the ports it listens on (free ones, so the test runs beside anything),
// the Temporal address of the reconcile command and the provider of `paysim refunds` (which default to the
// local stack's usual ports); the payment simulator finds the API through HTTP_ADDR, as it would beside a
// stack started with it. Then it runs the curl the stack printed for a first order.
func TestREADMEQuickStart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's tour needs curl, which is not installed")
	}
	r := readREADME(t)
	blocks := shBlocks(r.text)
	if len(blocks) == 0 {
		t.Fatal("README.md has no sh block")
	}
	quick := strings.Split(strings.TrimSpace(blocks[0]), "\n")
	if len(quick) != 2 || strings.TrimSpace(quick[0]) != runCommand || strings.TrimSpace(quick[1]) != testCommand {
		t.Fatalf("the README's first block is %q, want the two commands %q and %q", quick, runCommand, testCommand)
	}
	tour := steps(shBlocks(r.section(t, "Five-minute tour")))
	if len(tour) < 5 {
		t.Fatalf("the tour has %d commands", len(tour))
	}

	p := freePorts(t)
	dir := t.TempDir()
	api := fmt.Sprintf("%s:%d", localIP, p.http)
	ui := fmt.Sprintf("%s:%d", localIP, p.ui)
	replacer := strings.NewReplacer(
		runCommand, `"$README_LOCALSTACK"`,
		"127.0.0.1:8080", api,
		"127.0.0.1:8233", ui,
		"go run ./reconcile", fmt.Sprintf("TEMPORAL_ADDRESS=%s:%d go run ./reconcile", localIP, p.temporal),
		"go run ./paysim refunds", fmt.Sprintf("go run ./paysim refunds -provider http://%s:%d", localIP, p.provider),
	)

	// The script: the run command first (as the user does in the first terminal), then the tour, each
	// command followed by a marker so that its output can be told apart.
	var script strings.Builder
	script.WriteString("set -eu\n")
	all := append([]step{{cmd: runCommand, expect: []string{"Place a first order"}}}, tour...)
	for i, s := range all {
		fmt.Fprintf(&script, "%s\necho '@@@ %d'\n", replacer.Replace(s.cmd), i)
	}

	wrapper := filepath.Join(dir, "localstack.sh")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeWrapper(t, wrapper, self, dir, p)
	t.Cleanup(func() { stopWrapped(t, dir) })

	root, _ := filepath.Abs("..")
	cmd := exec.Command("sh", "-c", script.String())
	cmd.Dir = root
	cmd.Env = append(scrubbedEnv(), "README_LOCALSTACK="+wrapper, "HTTP_ADDR="+api)
	for k, v := range storeEnv(t) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	outputs := splitOutputs(string(out), len(all))
	for i, s := range all {
		if i >= len(outputs) {
			t.Fatalf("the tour stopped at %q (%v):\n%s\nstack stderr:\n%s", s.cmd, err, out, readFile(filepath.Join(dir, "stderr")))
		}
		for _, want := range s.expect {
			if !strings.Contains(outputs[i], want) {
				t.Errorf("README command\n  %s\nanswered\n  %s\nwhich lacks %q", s.cmd, strings.TrimSpace(outputs[i]), want)
			}
		}
	}
	if err != nil {
		t.Fatalf("the tour failed: %v\n%s", err, out)
	}

	// The curl the stack printed for a first order places one.
	banner := readFile(filepath.Join(dir, "stdout"))
	_, after, _ := strings.Cut(banner, "Place a first order:\n")
	curl, _, _ := strings.Cut(strings.TrimSpace(after), "\n")
	if !strings.HasPrefix(curl, "curl ") {
		t.Fatalf("the stack printed no curl for a first order:\n%s", banner)
	}
	got, err := exec.Command("sh", "-c", curl).CombinedOutput()
	if err != nil || !strings.Contains(string(got), `"status":"AWAITING_PAYMENT"`) {
		t.Errorf("the printed curl\n  %s\nanswered %v\n  %s", curl, err, got)
	}
}

// writeWrapper writes the script that stands in for `go run ./localstack`: it stops the stack it started
// before (like Ctrl-C), starts the command again in the background on the test's ports and data directory,
// and returns once it printed where everything is.
func writeWrapper(t *testing.T, path, self, dir string, p ports) {
	t.Helper()
	args := strings.Join(p.args(filepath.Join(dir, "data"))[1:], " ")
	script := fmt.Sprintf(`#!/bin/sh
set -eu
d=%[1]q
if [ -f "$d/pid" ]; then
  pid=$(cat "$d/pid")
  kill -INT "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$d/pid"
fi
: >"$d/stdout"
%[2]s=1 %[3]q %[4]s "$@" >"$d/stdout" 2>>"$d/stderr" &
echo $! >"$d/pid"
i=0
until grep -q "Place a first order" "$d/stdout"; do
  if ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then cat "$d/stderr" >&2; exit 1; fi
  i=$((i + 1)); if [ "$i" -gt 1200 ]; then echo "local stack not up after 2 minutes" >&2; exit 1; fi
  sleep 0.1
done
cat "$d/stdout"
`, dir, mainEnv, self, args)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// stopWrapped stops the stack the wrapper left running, like Ctrl-C, and waits for it to exit.
func stopWrapped(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = proc.Signal(syscall.SIGINT)
	deadline := time.Now().Add(time.Minute)
	for proc.Signal(syscall.Signal(0)) == nil {
		if time.Now().After(deadline) {
			t.Errorf("the local stack (pid %d) did not stop within a minute of Ctrl-C; killing it", pid)
			_ = proc.Kill()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// splitOutputs cuts the script's output at the markers echoed after each command.
func splitOutputs(out string, n int) []string {
	var res []string
	rest := out
	for i := 0; i < n; i++ {
		marker := fmt.Sprintf("@@@ %d\n", i)
		before, after, ok := strings.Cut(rest, marker)
		if !ok {
			break
		}
		res = append(res, before)
		rest = after
	}
	return res
}

// scrubbedEnv is this process's environment without any variable ordersaga reads, so the tour sees what a
// newcomer's shell has (CI's MYSQL_DSN and REDIS_ADDR come back through storeEnv, scoped to this test).
func scrubbedEnv() []string {
	read := readVariables()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !read[k] {
			env = append(env, kv)
		}
	}
	return env
}

// readVariables is every environment variable internal/config reads.
func readVariables() map[string]bool {
	read := map[string]bool{}
	record := func(name string) string { read[name] = true; return "" }
	_, _ = config.FromEnv(record)
	return read
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// processVariables is what the processes read: readVariables, and what the worker's and the starter's mains
// read themselves with getenv("…").
func processVariables(t *testing.T) map[string]bool {
	t.Helper()
	read := readVariables()
	fset := token.NewFileSet()
	for _, dir := range []string{"worker", "starter"} {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				fn, isIdent := call.Fun.(*ast.Ident)
				sel, isSel := call.Fun.(*ast.SelectorExpr)
				lit, isLit := call.Args[0].(*ast.BasicLit)
				named := (isIdent && fn.Name == "getenv") || (isSel && sel.Sel.Name == "Getenv")
				if named && isLit && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						read[v] = true
					}
				}
				return true
			})
		}
	}
	return read
}

// TestConfigurationTableListsEveryVariable keeps the configuration table in step with the code.
func TestConfigurationTableListsEveryVariable(t *testing.T) {
	t.Parallel()
	sec := readDoc(t, configurationDoc).section(t, "Variables")
	listed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(sec))
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	inTable := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the first table only: the variables
			}
			continue
		}
		inTable = true
		first := strings.Split(line, "|")[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			listed[m[1]] = true
		}
	}
	read := processVariables(t)
	var missing, extra []string
	for k := range read {
		if !listed[k] {
			missing = append(missing, k)
		}
	}
	for k := range listed {
		if !read[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("%s's table lacks %v, which the code reads", configurationDoc, missing)
	}
	if len(extra) > 0 {
		t.Errorf("%s's table lists %v, which nothing reads", configurationDoc, extra)
	}
}

// TestREADMELinksResolve keeps the relative links of the README and the configuration page pointing at files
// of the repository, and their anchors at headings of the page they name.
func TestREADMELinksResolve(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"README.md", configurationDoc} {
		for _, p := range brokenLinks(t, readDoc(t, doc)) {
			t.Error(p)
		}
	}
}

// TestREADMELinksCatchBroken feeds the link check a page with a broken link of each kind.
func TestREADMELinksCatchBroken(t *testing.T) {
	t.Parallel()
	page := readme{path: "docs/fake.md", text: "# Fake\n\n## Its flags\n\n" +
		"[ok](#its-flags) [ok](configuration.md#security) [ok](../README.md#five-minute-tour) [ok](https://x.test/#a)\n" +
		"[no file](nosuch.md) [no heading](#flags) [no heading there](configuration.md#no-such-heading)\n"}
	got := brokenLinks(t, page)
	want := []string{
		"docs/fake.md links to nosuch.md, which does not exist",
		"docs/fake.md links to #flags: docs/fake.md has no such heading",
		"docs/fake.md links to configuration.md#no-such-heading: docs/configuration.md has no such heading",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken links found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)

// brokenLinks returns a line for every relative link of doc whose file does not exist, or whose anchor names
// no heading of the Markdown page it points at.
func brokenLinks(t *testing.T, doc readme) []string {
	t.Helper()
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(doc.text, -1) {
		target, anchor := m[1], strings.TrimPrefix(m[2], "#")
		if strings.Contains(target, "://") {
			continue
		}
		page := doc
		if target != "" {
			rel := path.Join(path.Dir(doc.path), target)
			if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(rel))); err != nil {
				out = append(out, fmt.Sprintf("%s links to %s, which does not exist", doc.path, target))
				continue
			}
			if anchor == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			page = readDoc(t, rel)
		}
		if anchor != "" && !slices.Contains(headingAnchors(page.text), anchor) {
			out = append(out, fmt.Sprintf("%s links to %s#%s: %s has no such heading", doc.path, target, anchor, page.path))
		}
	}
	return out
}

// headingAnchors are the anchors a Markdown renderer gives a page's headings: lower case, spaces as hyphens,
// punctuation dropped, a repeated heading numbered from -1. Headings inside code blocks are not headings.
func headingAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}
