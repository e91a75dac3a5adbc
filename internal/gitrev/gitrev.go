// Package gitrev names the commit a measurement ran on, for the tables the tools print (bench, chaos).
package gitrev

import (
	"os/exec"
	"strings"
)

// Commit is the short hash of dir's HEAD, with "+dirty" when the tree differs from it (a file changed or
// not tracked), so that a figure measured on uncommitted code says so; "unknown" outside a repository.
func Commit(dir string) string {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	head, err := git("rev-parse", "--short", "HEAD")
	if err != nil || head == "" {
		return "unknown"
	}
	status, err := git("status", "--porcelain")
	if err != nil || status != "" {
		return head + "+dirty"
	}
	return head
}
