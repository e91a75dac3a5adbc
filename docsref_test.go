package ordersaga_test

import (
	"bufio"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The documentation's references to files of the repository: every Markdown link to a local file, every path
// in backticks, and every bare NAME.md must name a file or directory that exists, so that a rename or a
// deletion that leaves a document behind fails here rather than in a reader's hands.

// generatedPaths are paths the documents name that the repository does not hold on purpose: what the tools
// write when they run (the local stack's data directory, the flash-sale report).
var generatedPaths = []string{".localstack/", "flashsale-report/"}

// pathExtensions are the endings that make a backticked word without a slash a path.
var pathExtensions = []string{".go", ".md", ".lua", ".sql", ".yml", ".yaml", ".sh", ".pml", ".sha256", ".mod", ".sum"}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	bareMD     = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])([A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b`)
	urlLike    = regexp.MustCompile("[a-z][a-z0-9+.-]*://[^\\s`)>]+|<[^>\\s]+>|mailto:[^\\s`)>]+")
	mimeType   = regexp.MustCompile(`^(application|text|image|multipart)/`)
	goWordPath = regexp.MustCompile(`(?:^|[\s(])((?:\.{1,2}/)?[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*/?)`)
)

// TestDocReferencesResolve checks the repository's documents: README.md, BENCHMARKS.md, docs/*.md,
// models/README.md and every doc.go.
func TestDocReferencesResolve(t *testing.T) {
	t.Parallel()
	docs := documents(t, ".")
	idx := indexRepo(t, ".")
	if len(docs) < 5 {
		t.Fatalf("found only %d documents to check: %v", len(docs), docs)
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range danglingRefs(idx, doc, string(b)) {
			t.Error(p)
		}
	}
}

// TestDocReferencesCatchDangling feeds the checker documents with one dangling reference of each kind, and
// references it must leave alone.
func TestDocReferencesCatchDangling(t *testing.T) {
	t.Parallel()
	fake := "# A page\n" +
		"See [the design](docs/no-such-page.md) and [the API](docs/http-api.md#post-v1orders).\n" +
		"The store is in `internal/nosuchstore/store.go`; the stock in `internal/redisstock/keys.go`.\n" +
		"Read NOSUCH.md first, then README.md.\n" +
		"Not paths: `go run ./localstack`, `inv:{SKU}:avail`, `$HOME/x.go`, `*.go`, `https://example.com/a.md`,\n" +
		"`application/problem+json`, `/v1/orders`, `/proc/cpuinfo`, `127.0.0.1:8080`, `.localstack/ordersaga.db`,\n" +
		"<https://example.com/DESIGN.md>, `github.com/redis/go-redis/v9`, `internal/config.Config`.\n" +
		"```sh\ncat `GONE.md` missing/file.go\n```\n"
	idx := indexRepo(t, ".")
	got := danglingRefs(idx, "docs/fake.md", fake)
	want := []string{
		"docs/fake.md:2: link to docs/no-such-page.md",
		"docs/fake.md:3: path internal/nosuchstore/store.go",
		"docs/fake.md:4: name NOSUCH.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("dangling references found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	goDoc := "// Package x keeps its scripts in lua/gone.lua and follows DESIGN.md; see workflows/ and\n" +
		"// internal/redisstock/lua/reserve.lua.\npackage x\n"
	got = danglingRefs(idx, "internal/x/doc.go", goDoc)
	want = []string{
		"internal/x/doc.go:1: path lua/gone.lua",
		"internal/x/doc.go:1: name DESIGN.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("dangling references in a doc.go:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// documents lists the files checked, relative to root.
func documents(t testing.TB, root string) []string {
	t.Helper()
	docs := []string{"README.md", "BENCHMARKS.md", "models/README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		docs = append(docs, filepath.ToSlash(rel))
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "doc.go" {
			rel, _ := filepath.Rel(root, p)
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// danglingRefs returns "file:line: kind target" for every reference of doc (its path relative to root, its
// text) that names nothing in the repository.
func danglingRefs(idx *repoIndex, doc, text string) []string {
	isGo := strings.HasSuffix(doc, ".go")
	var out []string
	seen := map[string]bool{}
	report := func(line int, kind, target string) {
		key := fmt.Sprint(line, " ", target)
		if seen[key] || idx.exists(doc, target) {
			return
		}
		seen[key] = true
		out = append(out, fmt.Sprintf("%s:%d: %s %s", doc, line, kind, target))
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fenced := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if isGo {
			c, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
			if !ok {
				continue
			}
			line = c
		} else if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if !isGo {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, ":") {
					continue // an anchor on the same page, a URL, mailto:
				}
				report(n, "link to", target)
			}
		}
		plain := urlLike.ReplaceAllString(mdLink.ReplaceAllString(line, "]"), " ")
		for _, m := range codeSpan.FindAllStringSubmatch(plain, -1) {
			if p, ok := pathLike(m[1]); ok {
				report(n, "path", p)
			}
		}
		if isGo {
			// Go comments name paths without backticks: a word with a slash that ends in a known extension.
			for _, m := range goWordPath.FindAllStringSubmatch(plain, -1) {
				w := strings.TrimRight(m[1], ".,;:")
				if strings.Contains(w, "/") && hasPathExtension(w) {
					if p, ok := pathLike(w); ok {
						report(n, "path", p)
					}
				}
			}
		}
		for _, m := range bareMD.FindAllStringSubmatch(plain, -1) {
			report(n, "name", m[1])
		}
	}
	return out
}

// pathLike says whether a backticked word is a path of the repository, and returns it cleaned: a word with a
// slash or a known file extension, and no spaces (a command), variables, globs, placeholders, URLs, ports or
// key patterns; a Go selector after a package path (internal/config.Config) is dropped.
func pathLike(s string) (string, bool) {
	if s == "" || strings.ContainsAny(s, " \t$*?{}<>[]…=@|;,'\"()") || strings.Contains(s, ":") {
		return "", false
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "_") ||
		mimeType.MatchString(s) || isStdPackage(s) {
		return "", false
	}
	first, _, hasSlash := strings.Cut(s, "/")
	if hasSlash && strings.Contains(first, ".") && first != "." && first != ".." {
		return "", false // a module path: github.com/..., go.temporal.io/...
	}
	if !hasSlash && !hasPathExtension(s) {
		return "", false
	}
	for _, g := range generatedPaths {
		if strings.HasPrefix(strings.TrimPrefix(s, "./"), g) || strings.TrimPrefix(s, "./")+"/" == g {
			return "", false
		}
	}
	if hasSlash && !hasPathExtension(s) {
		// internal/config.Config: the package's directory.
		dir, last := path.Split(strings.TrimSuffix(s, "/"))
		if i := strings.Index(last, "."); i > 0 {
			s = dir + last[:i]
		}
	}
	return s, true
}

func hasPathExtension(s string) bool {
	for _, e := range pathExtensions {
		if strings.HasSuffix(s, e) {
			return true
		}
	}
	return false
}

// repoIndex is every file and directory of the repository, by its path from the root.
type repoIndex struct {
	root  string
	paths []string
}

// indexRepo lists the repository's files and directories (not .git, nor what the tools generate).
func indexRepo(t testing.TB, root string) *repoIndex {
	t.Helper()
	idx := &repoIndex{root: root}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (d.Name() == ".git" || slices.Contains(generatedPaths, rel+"/")) {
			return filepath.SkipDir
		}
		if rel != "." {
			idx.paths = append(idx.paths, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// exists says whether target names a file or directory: from the repository's root, from doc's directory, or
// as the tail of a path of the repository (a file named within the section about its package: `keys.go`,
// `lua/`, `reserve.lua`).
func (idx *repoIndex) exists(doc, target string) bool {
	for _, base := range []string{idx.root, filepath.Join(idx.root, filepath.Dir(doc))} {
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(target))); err == nil {
			return true
		}
	}
	tail := "/" + strings.TrimSuffix(strings.TrimPrefix(target, "./"), "/")
	for _, p := range idx.paths {
		if strings.HasSuffix("/"+p, tail) {
			return true
		}
	}
	return false
}

// isStdPackage says whether s is a package of the Go standard library (net/http, go/ast).
func isStdPackage(s string) bool {
	if !strings.Contains(s, "/") || hasPathExtension(s) {
		return false
	}
	first, _, _ := strings.Cut(s, "/")
	if strings.Contains(first, ".") {
		return false
	}
	fi, err := os.Stat(filepath.Join(goroot(), "src", filepath.FromSlash(strings.TrimSuffix(s, "/"))))
	return err == nil && fi.IsDir()
}

// goroot is the Go installation's root: a test binary built with -trimpath (CI) does not know it
// (build.Default.GOROOT is empty), so the go command is asked.
var goroot = sync.OnceValue(func() string {
	if build.Default.GOROOT != "" {
		return build.Default.GOROOT
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})
