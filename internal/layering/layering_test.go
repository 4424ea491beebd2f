// Package layering_test holds the module's import graph, as `go list`
// reports it, to the package table of the README's "How it is built"
// section, and to the rules that must never break.
//
// The table's "may import" column is a comma-separated list of entries,
// each one of:
//   - a package of this module in backticks (`a2a`, `tasks/redisstore/`):
//     that package, not the ones below it;
//   - "the packages above": every package of the rows above this one, but
//     the test helpers (the rows whose "owns" begins "for tests");
//   - "never X", X a package in backticks or a module's name: not that one,
//     even where another entry would allow it;
//   - a module's name from moduleNames (zap, go-redis, grpc, …);
//   - "stdlib". The standard library is open to every package and never
//     needs naming: "stdlib" is written where a package imports nothing
//     else, so that no column is empty;
//   - "—", alone: the row names no package of this module (a directory of
//     data, or a Go module of its own).
//
// A package imports only the packages of its own row or of rows above it,
// and only what its column names. This holds a package's own files, not
// its tests: a test may import its helpers below it, or the package whose
// work it checks. The rules hold tests too where their rule says so.
package layering_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleNames are the names the "may import" column gives other modules:
// each stands for the import paths it lists and those below them.
var moduleNames = map[string][]string{
	"Caddy":          {"github.com/caddyserver/caddy/v2"},
	"OpenTelemetry":  {"go.opentelemetry.io/otel"},
	"bcrypt":         {"golang.org/x/crypto/bcrypt"},
	"expr":           {"github.com/expr-lang/expr"},
	"go-jose":        {"github.com/go-jose/go-jose/v4"},
	"go-redis":       {"github.com/redis/go-redis/v9"},
	"grpc":           {"google.golang.org/grpc", "google.golang.org/genproto/googleapis/rpc"}, // with its status details
	"humanize":       {"github.com/dustin/go-humanize"},
	"jcs":            {"github.com/gowebpki/jcs"},
	"jwt":            {"github.com/golang-jwt/jwt/v5"},
	"prometheus":     {"github.com/prometheus/client_golang"},
	"protobuf":       {"google.golang.org/protobuf"},
	"the MCP go-sdk": {"github.com/modelcontextprotocol/go-sdk"},
	"uuid":           {"github.com/google/uuid"},
	"x/net":          {"golang.org/x/net"},
	"yaml":           {"gopkg.in/yaml.v3"},
	"zap":            {"go.uber.org/zap"},
}

// rules must never break, whatever the table says. Their patterns are
// the go command's: "./x" is this module's package x ("." its root), other
// paths are import paths, and "p/..." is p and the packages below it. A
// rule holds for everything a package links, not only what it imports
// itself; andTests, also for its test binary.
var rules = []struct {
	name     string
	from     []string
	except   []string
	mayNot   []string
	andTests bool
}{
	{name: "server does not import push", from: []string{"./server"}, mayNot: []string{"./push/..."}},
	{name: "tools do not import caddymodule", from: []string{"./tools/..."}, mayNot: []string{"./caddymodule/..."}, andTests: true},
	{name: "mapping imports neither tasks nor authn", from: []string{"./mapping"}, mayNot: []string{"./tasks/...", "./authn/..."}, andTests: true},
	{name: "a2a knows nothing of HTTP handlers", from: []string{"./a2a"}, mayNot: []string{"net/http/..."}},
	{name: "nothing but caddymodule, cmd/caddy and the root plugin imports Caddy", from: []string{"./..."},
		except: []string{".", "./caddymodule", "./cmd/caddy"}, mayNot: []string{"github.com/caddyserver/caddy/v2/..."}, andTests: true},
}

// designNames maps a name of ../shared/DESIGN.md's package table to the
// README's name for it, where the two differ.
var designNames = map[string]string{
	"tasks/redis": "tasks/redisstore",
	"tools/…":     "tools/dryrun",
}

// goPackage is what `go list -json` says of a package.
type goPackage struct {
	ImportPath string
	Standard   bool
	ForTest    string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// graph is the module's import graph, with its tests' binaries.
type graph struct {
	module   string                // the module's path
	root     string                // its directory
	packages map[string]*goPackage // by import path: the module's packages and all they link
	tests    map[string]*goPackage // each package's test binary, by the package's import path
	own      []string              // the module's packages, sorted
}

func loadGraph(t *testing.T) *graph {
	t.Helper()
	var mod struct{ Path, Dir string }
	if err := json.Unmarshal(goList(t, "", "-m", "-json"), &mod); err != nil {
		t.Fatalf("go list -m -json: %v", err)
	}
	g := &graph{module: mod.Path, root: mod.Dir, tests: map[string]*goPackage{},
		packages: map[string]*goPackage{"C": {ImportPath: "C", Standard: true}}} // cgo's, which go list names but does not list
	dec := json.NewDecoder(bytes.NewReader(goList(t, mod.Dir, "-deps", "-test", "-json", "./...")))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -deps -test -json ./...: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		switch {
		case strings.HasSuffix(p.ImportPath, ".test"):
			g.tests[strings.TrimSuffix(p.ImportPath, ".test")] = &p
		case p.ForTest == "":
			g.packages[p.ImportPath] = &p
			if g.isOwn(p.ImportPath) {
				g.own = append(g.own, p.ImportPath)
			}
		}
	}
	slices.Sort(g.own)
	return g
}

// goList runs go list in dir with args, and returns its output.
func goList(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

func (g *graph) isOwn(path string) bool {
	return path == g.module || strings.HasPrefix(path, g.module+"/")
}

// rel is a package's path relative to the module's root ("" for the root).
func (g *graph) rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, g.module), "/")
}

// show names a package in a message: the module's by their path relative
// to its root, others by their import path.
func (g *graph) show(path string) string {
	if path == g.module {
		return "the root package"
	}
	if g.isOwn(path) {
		return g.rel(path) + "/"
	}
	return path
}

// abs is the import path of a package of this module, from its path
// relative to the module's root ("" for the root).
func (g *graph) abs(rel string) string {
	if rel == "" {
		return g.module
	}
	return g.module + "/" + rel
}

// pattern is the import path pattern of a pattern of the rules.
func (g *graph) pattern(p string) string {
	if p == "." || strings.HasPrefix(p, "./") {
		return g.module + p[1:]
	}
	return p
}

// matches says whether path is pattern's, or below it for "x/...".
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// row is one row of a package table.
type row struct {
	line     int      // in its file
	first    string   // the first column
	names    []string // the first column's paths, as written
	owns     string
	mayText  string
	forTests bool
	none     bool // "—": no package of this module
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readTable reads the first table after the heading of file.
func readTable(t *testing.T, file, heading string) []row {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("the package table: %v", err)
	}
	defer f.Close()
	var rows []row
	in, header := false, 0
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for line := 1; s.Scan(); line++ {
		text := s.Text()
		switch {
		case text == heading:
			in = true
		case !in:
		case strings.HasPrefix(text, "|") && header < 2:
			header++ // the column names and the line under them
		case strings.HasPrefix(text, "|"):
			cells := strings.Split(strings.Trim(text, "| "), " | ")
			if len(cells) != 3 {
				t.Fatalf("%s:%d: a package table row has %d cells, want 3 (package, owns, may import)", file, line, len(cells))
			}
			r := row{line: line, first: cells[0], owns: cells[1], mayText: cells[2], forTests: strings.HasPrefix(cells[1], "for tests"), none: cells[2] == "—"}
			for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
				r.names = append(r.names, m[1])
			}
			rows = append(rows, r)
		case header > 0:
			return rows // the table ended
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no package table under %q", file, heading)
	}
	return rows
}

// dir is the directory a table name stands for, relative to the module's
// root: `x/` and `x` name x, `plugin.go` the directory that holds it.
func dir(name string) string {
	if strings.HasSuffix(name, ".go") {
		name = path.Dir(name)
	}
	if name == "." {
		return ""
	}
	return strings.TrimSuffix(name, "/")
}

// table is the README's package table, resolved against the graph.
type table struct {
	rows  []row
	file  string
	rowOf map[string]int // a package's row, by import path
}

func readREADME(t *testing.T, g *graph) *table {
	t.Helper()
	tb := &table{file: filepath.Join(g.root, "README.md"), rowOf: map[string]int{}}
	tb.rows = readTable(t, tb.file, "## How it is built")
	for i, r := range tb.rows {
		for _, name := range r.names {
			path := g.abs(dir(name))
			if _, ok := g.packages[path]; !ok || r.none {
				continue // reported by TestEveryPackageHasOneRow
			}
			if j, ok := tb.rowOf[path]; ok {
				t.Errorf("%s:%d: `%s` has a row already, at line %d", tb.file, r.line, name, tb.rows[j].line)
			}
			tb.rowOf[path] = i
		}
	}
	return tb
}

// TestEveryPackageHasOneRow: a new package without a row fails here, and
// so does a row whose package is gone.
func TestEveryPackageHasOneRow(t *testing.T) {
	g := loadGraph(t)
	tb := readREADME(t, g)
	for _, path := range g.own {
		if _, ok := tb.rowOf[path]; !ok {
			t.Errorf("%s: the package %s has no row in the table of \"How it is built\": add one (its job, and what it may import)", tb.file, g.show(path))
		}
	}
	for _, r := range tb.rows {
		for _, name := range r.names {
			_, isPackage := g.packages[g.abs(dir(name))]
			switch {
			case r.none && isPackage:
				t.Errorf("%s:%d: `%s` is a package of this module: say what it may import, not —", tb.file, r.line, name)
			case r.none:
				if _, err := os.Stat(filepath.Join(g.root, filepath.FromSlash(dir(name)))); err != nil {
					t.Errorf("%s:%d: `%s`: %v", tb.file, r.line, name, err)
				}
			case !isPackage:
				t.Errorf("%s:%d: `%s` is no package of this module (gone, or its name misspelled)", tb.file, r.line, name)
			}
		}
	}
}

// allowed is what one row's "may import" column says.
type allowed struct {
	packages map[string]bool // the module's own
	prefixes []string        // other modules'
	never    []string        // import paths, or prefixes of other modules'
}

func (a *allowed) allows(g *graph, path string) bool {
	for _, n := range a.never {
		if matches(n, path) {
			return false
		}
	}
	if g.isOwn(path) {
		return a.packages[path]
	}
	for _, p := range a.prefixes {
		if matches(p+"/...", path) {
			return true
		}
	}
	return false
}

// mayImport reads row i's "may import" column; a word it does not know is
// an error.
func (tb *table) mayImport(g *graph, i int) (*allowed, error) {
	r := tb.rows[i]
	a := &allowed{packages: map[string]bool{}}
	for entry := range strings.SplitSeq(r.mayText, ",") {
		entry = strings.TrimSpace(entry)
		name, never := strings.CutPrefix(entry, "never ")
		switch {
		case r.none || entry == "stdlib":
		case entry == "the packages above":
			for path, j := range tb.rowOf {
				a.packages[path] = a.packages[path] || j < i && !tb.rows[j].forTests
			}
		case strings.HasPrefix(name, "`"):
			path := g.abs(dir(strings.Trim(name, "`")))
			if _, ok := g.packages[path]; !ok {
				return nil, fmt.Errorf("%q: no package of this module", entry)
			}
			if never {
				a.never = append(a.never, path)
			} else {
				a.packages[path] = true
			}
		case moduleNames[name] != nil:
			prefixes := moduleNames[name]
			if never {
				for _, p := range prefixes {
					a.never = append(a.never, p+"/...")
				}
			} else {
				a.prefixes = append(a.prefixes, prefixes...)
			}
		default:
			return nil, fmt.Errorf("%q: not a package in backticks, \"the packages above\", \"stdlib\" or a module's name of moduleNames (internal/layering)", entry)
		}
	}
	return a, nil
}

// TestImportsAreInTheTable: each package imports only what its row's "may
// import" column names, and nothing of a row below its own.
func TestImportsAreInTheTable(t *testing.T) {
	g := loadGraph(t)
	tb := readREADME(t, g)
	for i, r := range tb.rows {
		if r.none {
			continue
		}
		may, err := tb.mayImport(g, i)
		if err != nil {
			t.Errorf("%s:%d: may import: %v", tb.file, r.line, err)
			continue
		}
		for path, j := range tb.rowOf {
			if j != i {
				continue
			}
			for _, imp := range g.packages[path].Imports {
				if g.packages[imp].Standard {
					continue
				}
				if k, own := tb.rowOf[imp]; own && k > i {
					t.Errorf("%s:%d: %s imports %s, whose row is below its own (line %d): imports point up the table", tb.file, r.line, g.show(path), g.show(imp), tb.rows[k].line)
				} else if !may.allows(g, imp) {
					t.Errorf("%s:%d: %s imports %s, which its \"may import\" column (%s) does not allow", tb.file, r.line, g.show(path), g.show(imp), r.mayText)
				}
			}
		}
	}
}

// TestRulesThatMustNeverBreak holds everything each package links to the
// rules.
func TestRulesThatMustNeverBreak(t *testing.T) {
	g := loadGraph(t)
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			checked := 0
			for _, path := range g.own {
				if !g.anyMatch(rule.from, path) || g.anyMatch(rule.except, path) {
					continue
				}
				checked++
				if chain := g.chainTo(path, rule.mayNot); chain != nil {
					t.Errorf("%s: %s", rule.name, strings.Join(chain, " → "))
				}
				if test := g.tests[path]; rule.andTests && test != nil {
					for _, dep := range test.Deps {
						dep, _, _ = strings.Cut(dep, " ") // "p [p.test]": p built for the test
						if g.anyMatch(rule.mayNot, dep) {
							t.Errorf("%s: the tests of %s link %s", rule.name, g.show(path), g.show(dep))
						}
					}
				}
			}
			if checked == 0 {
				t.Errorf("%s: no package of this module is %q: the rule checks nothing", rule.name, rule.from)
			}
		})
	}
}

// TestA2ANamesA2AOnly: the protocol package and those below it say
// nothing of MCP, whose names (methods, labels) belong to its binding and
// to the engine.
func TestA2ANamesA2AOnly(t *testing.T) {
	g := loadGraph(t)
	mcp := regexp.MustCompile(`(?i)mcp`)
	err := filepath.WalkDir(filepath.Join(g.root, "a2a"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if mcp.MatchString(line) {
				t.Errorf("%s:%d names MCP: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (g *graph) anyMatch(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(g.pattern(p), path) })
}

// chainTo is the shortest chain of imports from path to a package of
// targets, or nil when it links none.
func (g *graph) chainTo(path string, targets []string) []string {
	from := map[string]string{path: ""}
	for queue := []string{path}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if p != path && g.anyMatch(targets, p) {
			chain := []string{g.show(p)}
			for p = from[p]; p != ""; p = from[p] {
				chain = append([]string{g.show(p)}, chain...)
			}
			return chain
		}
		for _, imp := range g.packages[p].Imports {
			if _, seen := from[imp]; !seen {
				from[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// TestREADMECoversDESIGN: each row of ../shared/DESIGN.md's package table
// has a README row: each of its names has one, or one of the names it
// gives "(or …)", after designNames. Only that: the README's table is the
// one kept current, DESIGN's cannot be edited from the project, and it is
// not there outside the workplace that has it.
func TestREADMECoversDESIGN(t *testing.T) {
	g := loadGraph(t)
	design := filepath.Join(g.root, "..", "shared", "DESIGN.md")
	if _, err := os.Stat(design); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s is not there: nothing to compare", design)
	}
	readme := map[string]bool{}
	for _, r := range readREADME(t, g).rows {
		for _, name := range r.names {
			readme[dir(name)] = true
		}
	}
	inREADME := func(name string) bool {
		name = dir(name)
		if to, ok := designNames[name]; ok {
			name = to
		}
		return readme[name]
	}
	for _, r := range readTable(t, design, "## Packages, and which way the arrows point") {
		required, alternatives, _ := strings.Cut(r.first, "(or ")
		names := backticked.FindAllStringSubmatch(required, -1)
		found := len(names) > 0 && !slices.ContainsFunc(names, func(m []string) bool { return !inREADME(m[1]) })
		for _, m := range backticked.FindAllStringSubmatch(alternatives, -1) {
			found = found || inREADME(m[1])
		}
		if !found {
			t.Errorf("%s:%d: %s has no README row (by these names, or designNames in internal/layering)", design, r.line, r.names)
		}
	}
}
