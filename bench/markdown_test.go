package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fixedPairs is a run's result as the steps return it: two headline pairs (one with a failing side), and a
// row of what a change bought, which the headline table leaves out.
func fixedPairs() []pair {
	sec := func(name string, ops int64) result { return result{Name: name, Ops: ops, Elapsed: 2 * time.Second} }
	http := pair{Layer: "1 sold-out rejections via HTTP", Real: sec("POST /v1/orders → 409 (internal/api)", 40000),
		Limit: sec("bare net/http handler → 409", 80000), Target: 0.8, Only: "http", Load: "0.50 0.40 0.30"}
	bought := pair{Layer: "1 … what the fast path bought", Real: sec("the API", 40000), Limit: sec("before", 4000), Only: "http"}
	temporal := pair{Layer: "3 accepted orders end to end (temporaltest, real stores)", Real: sec("orderclient.Place | real worker", 190),
		Limit: sec("bare workflow", 200), Target: 0.9, Only: "temporal -temporal real", Load: "1.20 0.90 0.70"}
	temporal.Real.Errors, temporal.Real.FirstErr = 3, errors.New("context deadline exceeded")
	return []pair{http, bought, temporal}
}

func TestWriteMarkdownPrintsTheHeadlineTable(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	run := runInfo{CPUs: 2, CPU: "AMD EPYC 7B13", Commit: "abc1234+dirty", Started: time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)}
	writeMarkdown(&b, fixedPairs(), run)
	want := "| layer | measured | ops/s | limit | ops/s | ratio | target | machine | commit | date | reproduce |\n" +
		"|---|---|---:|---|---:|---:|---|---|---|---|---|\n" +
		"| 1 sold-out rejections via HTTP | POST /v1/orders → 409 (internal/api) | 20000 | bare net/http handler → 409 | 40000 | **50 %** | ≥ 80 % ✗ | 2 CPUs, AMD EPYC 7B13, load 0.50 0.40 0.30 | abc1234+dirty | 2026-12-07 | `scripts/bench.sh -only http` |\n" +
		"| 3 accepted orders end to end (temporaltest, real stores) | orderclient.Place \\| real worker | 95 | bare workflow | 100 | **95 %** | ≥ 90 % ✓ | 2 CPUs, AMD EPYC 7B13, load 1.20 0.90 0.70 | abc1234+dirty | 2026-12-07 | `scripts/bench.sh -only temporal -temporal real` |\n" +
		"\n" +
		"- 3 accepted orders end to end (temporaltest, real stores): orderclient.Place | real worker: 3 errors, first: context deadline exceeded\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteMarkdownSaysWhenNoPairRan(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeMarkdown(&b, fixedPairs()[1:2], runInfo{CPUs: 2, CPU: "x", Commit: "abc1234"})
	if got := b.String(); !strings.Contains(got, "no headline pair") || strings.Contains(got, "fast path bought") {
		t.Errorf("a run without a headline pair printed:\n%s", got)
	}
}

// TestGitCommitMarksADirtyTree: the short hash of HEAD, "+dirty" once the tree differs from it, and "unknown"
// outside a repository.
func TestGitCommitMarksADirtyTree(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := gitCommit(dir); got != "unknown" {
		t.Errorf("outside a repository: %q, want unknown", got)
	}
	gitRun("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun("add", "a.txt")
	gitRun("commit", "-q", "-m", "a")
	head := gitRun("rev-parse", "--short", "HEAD")
	if !regexp.MustCompile(`^[0-9a-f]{7,}$`).MatchString(head) {
		t.Fatalf("rev-parse printed %q", head)
	}
	if got := gitCommit(dir); got != head {
		t.Errorf("clean tree: %q, want %q", got, head)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := gitCommit(dir); got != head+"+dirty" {
		t.Errorf("changed file: %q, want %q", got, head+"+dirty")
	}
}
