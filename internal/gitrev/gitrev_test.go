package gitrev

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCommitMarksADirtyTree: the short hash of HEAD, "+dirty" once the tree differs from it, and "unknown"
// outside a repository.
func TestCommitMarksADirtyTree(t *testing.T) {
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
	if got := Commit(dir); got != "unknown" {
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
	if got := Commit(dir); got != head {
		t.Errorf("clean tree: %q, want %q", got, head)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Commit(dir); got != head+"+dirty" {
		t.Errorf("changed file: %q, want %q", got, head+"+dirty")
	}
}
