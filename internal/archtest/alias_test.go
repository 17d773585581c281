package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each name has one home: no package re-exports another of the module's
// names, as a type alias (type Info = kind.Info) or a constant or
// variable that is only that name (CodeNotFound = api.CodeNotFound).
// Callers use the name where it lives.
func TestNoAliasOfAnotherPackagesName(t *testing.T) {
	fset := token.NewFileSet()
	for name, p := range listPackages(t) {
		files, err := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range aliases(f) {
				t.Errorf("%s: %s re-exports %s; use the name where it lives", name, fset.Position(a.pos), a.what)
			}
		}
	}
}

type alias struct {
	pos  token.Pos
	what string
}

// aliases are f's top-level declarations that name another of the
// module's packages' identifiers under a name of f's own.
func aliases(f *ast.File) []alias {
	local := map[string]bool{} // import names of the module's packages
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		n := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			n = im.Name.Name
		}
		local[n] = true
	}
	fromModule := func(e ast.Expr) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || !local[x.Name] {
			return "", false
		}
		return x.Name + "." + sel.Sel.Name, true
	}
	var out []alias
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if what, ok := fromModule(s.Type); ok && s.Assign.IsValid() {
					out = append(out, alias{s.Pos(), what})
				}
			case *ast.ValueSpec:
				if len(s.Values) != len(s.Names) {
					continue
				}
				for _, v := range s.Values {
					if what, ok := fromModule(v); ok {
						out = append(out, alias{s.Pos(), what})
					}
				}
			}
		}
	}
	return out
}
