// instrument inserts `defer walktrace.Enter(file, func)()` at the start of every function and function literal
// of the non-test Go files under root (the module), except internal/walktrace.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const tracePkg = "github.com/ordersaga/ordersaga/internal/walktrace"

func main() {
	root := os.Args[1]
	n := 0
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if info.IsDir() {
			if strings.HasPrefix(info.Name(), ".") || info.Name() == "testdata" || rel == "internal/walktrace" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if err := instrument(path, rel); err != nil {
			fmt.Fprintln(os.Stderr, path, err)
			os.Exit(1)
		}
		n++
		return nil
	})
	fmt.Println("instrumented files:", n)
}

func instrument(path, rel string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	changed := false
	stmt := func(name string) ast.Stmt {
		call := &ast.CallExpr{
			Fun: &ast.SelectorExpr{X: ast.NewIdent("walktrace"), Sel: ast.NewIdent("Enter")},
			Args: []ast.Expr{
				&ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(rel)},
				&ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(name)},
			},
		}
		return &ast.DeferStmt{Call: &ast.CallExpr{Fun: call}}
	}
	lits := map[string]int{}
	litsIn := func(outer string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if x, ok := n.(*ast.FuncLit); ok {
				lits[outer]++
				name := fmt.Sprintf("%s.func%d@%d", outer, lits[outer], fset.Position(x.Pos()).Line)
				x.Body.List = append([]ast.Stmt{stmt(name)}, x.Body.List...)
				changed = true
			}
			return true
		})
	}
	for _, d := range f.Decls {
		x, ok := d.(*ast.FuncDecl)
		if !ok {
			litsIn("pkg", d)
			continue
		}
		if x.Body == nil {
			continue
		}
		name := x.Name.Name
		if x.Recv != nil && len(x.Recv.List) > 0 {
			name = recvName(x.Recv.List[0].Type) + "." + name
		}
		litsIn(name, x.Body)
		x.Body.List = append([]ast.Stmt{stmt(name)}, x.Body.List...)
		changed = true
	}
	if !changed {
		return nil
	}
	spec := &ast.ImportSpec{Name: ast.NewIdent("walktrace"), Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(tracePkg)}}
	var imp *ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			imp = g
			break
		}
	}
	if imp == nil {
		pos := f.Name.End()
		imp = &ast.GenDecl{Tok: token.IMPORT, TokPos: pos, Lparen: pos, Rparen: pos}
		f.Decls = append([]ast.Decl{imp}, f.Decls...)
	}
	if !imp.Lparen.IsValid() {
		imp.Lparen = imp.TokPos
		imp.Rparen = imp.Specs[len(imp.Specs)-1].End()
	}
	imp.Specs = append(imp.Specs, spec)
	f.Imports = append(f.Imports, spec)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	}
	return "?"
}
