package faults_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissingRedisServerFailsUnderCI: with the real MariaDB asked for (MYSQL_DSN) and no redis-server on
// PATH, a store fault test skips on a workstation but fails under CI=true, so that CI cannot stay green
// while the suite never ran. The test binary runs one fault test again in a child process whose PATH holds
// nothing.
func TestMissingRedisServerFailsUnderCI(t *testing.T) {
	for _, tc := range []struct {
		name, ci, want string
		fails          bool
	}{
		{name: "skips on a workstation", ci: "", want: "--- SKIP: TestProxyToxics", fails: false},
		{name: "fails under CI=true", ci: "true", want: "--- FAIL: TestProxyToxics", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestProxyToxics$", "-test.v", "-test.count=1")
			cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "CI=" + tc.ci,
				"MYSQL_DSN=root@tcp(127.0.0.1:1)/test"}
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.fails {
				t.Errorf("child failed = %v (%v), want %v:\n%s", failed, err, tc.fails, out)
			}
			if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "redis-server") {
				t.Errorf("child's output lacks %q and a word on redis-server:\n%s", tc.want, out)
			}
		})
	}
}
