package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The option reference of docs/caddyfile.md lists every option of the a2a
// and a2a_health handlers, one table row each: this test holds its rows to
// the JSON the configuration types read, so that an option added, renamed
// or removed without its row fails here.

const optionsDoc = "../docs/caddyfile.md"

// The reference's path notation: a map's key is written mapKey, a list's
// element [], and the fields of a struct that holds alternatives of one
// type (a oneof, of which one is set) are written once, as the placeholder
// alternatives gives it; that row names every alternative.
const mapKey = "<name>"

var alternatives = map[reflect.Type]string{reflect.TypeFor[a2a.OAuthFlows](): "<flow>"}

// option is one JSON option: its dotted path from the handler, its Go
// type, and for the placeholder of alternatives the JSON names it stands
// for.
type option struct {
	path   string
	typ    reflect.Type
	stands []string
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// jsonOptions lists the options of the struct t as encoding/json reads
// them, each path under prefix: embedded structs are flattened, structs,
// lists and maps of structs descended into, and types that read their own
// JSON (durations, json.RawMessage) are leaves.
func jsonOptions(t reflect.Type, prefix string) []option {
	if placeholder, ok := alternatives[t]; ok {
		o := option{path: prefix + placeholder}
		for name, f := range fieldsOf(t) {
			o.typ, o.stands = f.Type, append(o.stands, name)
		}
		return append([]option{o}, jsonOptions(optionStruct(o.typ, o.path))...)
	}
	var opts []option
	for name, f := range fieldsOf(t) {
		if f.Anonymous && name == "" {
			opts = append(opts, jsonOptions(deref(f.Type), prefix)...)
			continue
		}
		o := option{path: prefix + name, typ: f.Type}
		opts = append(opts, o)
		opts = append(opts, jsonOptions(optionStruct(f.Type, o.path))...)
	}
	return opts
}

// fieldsOf yields the fields of the struct t that JSON reads, with their
// JSON names; "" for an embedded struct, whose fields JSON reads as t's.
func fieldsOf(t reflect.Type) func(yield func(string, reflect.StructField) bool) {
	return func(yield func(string, reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			embedded := f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct
			switch {
			case name == "-", !f.IsExported() && !embedded:
				continue
			case name == "" && !embedded:
				name = f.Name // as encoding/json names it
			}
			if !yield(name, f) {
				return
			}
		}
	}
}

// optionStruct is the struct whose options stand below an option of type
// t at path, and the prefix they take; an empty struct when there is none.
func optionStruct(t reflect.Type, path string) (reflect.Type, string) {
	t, prefix := deref(t), path+"."
	switch t.Kind() {
	case reflect.Slice:
		t, prefix = deref(t.Elem()), path+"[]."
	case reflect.Map:
		t, prefix = deref(t.Elem()), path+"."+mapKey+"."
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshaler) {
		return reflect.TypeFor[struct{}](), ""
	}
	return t, prefix
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// docRow is one row of the reference: the table it is in (its heading)
// and its cells.
type docRow struct {
	line                                    int
	table                                   string
	caddyfile, path, typ, defaults, meaning string
}

var codePath = regexp.MustCompile("^`([^`]+)`$")

// referenceRows reads the rows of the tables under "## Option reference".
func referenceRows(t *testing.T, doc string) []docRow {
	t.Helper()
	var rows []docRow
	in, table := false, ""
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Option reference"
		case !in:
		case strings.HasPrefix(line, "### "):
			table = strings.TrimPrefix(line, "### ")
		case strings.HasPrefix(line, "| Caddyfile |"), strings.HasPrefix(line, "| --- |"):
		case strings.HasPrefix(line, "|"):
			cells := splitCells(line)
			if len(cells) != 5 {
				t.Errorf("%s:%d: want 5 cells (Caddyfile, JSON, type, default, meaning), got %d", optionsDoc, i+1, len(cells))
				continue
			}
			m := codePath.FindStringSubmatch(cells[1])
			if m == nil {
				t.Errorf("%s:%d: the JSON cell %q is not one `path`", optionsDoc, i+1, cells[1])
				continue
			}
			rows = append(rows, docRow{line: i + 1, table: table,
				caddyfile: cells[0], path: m[1], typ: cells[2], defaults: cells[3], meaning: cells[4]})
		}
	}
	return rows
}

// splitCells splits a table row at the pipes that are not escaped (\|).
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	start := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, strings.TrimSpace(line[start:i]))
			start = i + 1
		}
	}
	return append(cells, strings.TrimSpace(line[start:]))
}

// typeWords are the words a type cell may start with, by the Go type of
// the option.
func typeWords(t reflect.Type) []string {
	t = deref(t)
	switch {
	case t.Kind() == reflect.Int64 && reflect.PointerTo(t).Implements(unmarshaler):
		return []string{"duration"}
	case reflect.PointerTo(t).Implements(unmarshaler):
		return []string{"JSON"}
	case t.Kind() == reflect.Int64:
		return []string{"size in bytes", "count", "integer"}
	case t.Kind() == reflect.Int:
		return []string{"count", "integer"}
	case t.Kind() == reflect.String:
		return []string{"string"}
	case t.Kind() == reflect.Bool:
		return []string{"bool"}
	case t.Kind() == reflect.Slice:
		return []string{"list of "}
	case t.Kind() == reflect.Map:
		return []string{"map of "}
	case t.Kind() == reflect.Struct:
		return []string{"object"}
	}
	return []string{t.String()}
}

// checkReference reports where rows and the options of root differ: an
// option without a row, a row without an option, a path twice, an empty
// cell, a type cell that does not fit, a placeholder row that does not name
// each alternative.
func checkReference(rows []docRow, root reflect.Type) []string {
	var problems []string
	opts := map[string]option{}
	for _, o := range jsonOptions(root, "") {
		opts[o.path] = o
	}
	seen := map[string]int{}
	for _, r := range rows {
		at := fmt.Sprintf("%s:%d: %s", optionsDoc, r.line, r.path)
		if first, dup := seen[r.path]; dup {
			problems = append(problems, fmt.Sprintf("%s: documented again (first on line %d)", at, first))
			continue
		}
		seen[r.path] = r.line
		o, ok := opts[r.path]
		if !ok {
			problems = append(problems, at+": no such option in "+root.String())
			continue
		}
		for name, cell := range map[string]string{"Caddyfile": r.caddyfile, "type": r.typ, "default": r.defaults, "meaning": r.meaning} {
			if cell == "" {
				problems = append(problems, fmt.Sprintf("%s: the %s cell is empty", at, name))
			}
		}
		if words := typeWords(o.typ); !slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(r.typ, w) }) {
			problems = append(problems, fmt.Sprintf("%s: type %q, want one starting with %q (Go type %s)", at, r.typ, words, o.typ))
		}
		for _, alt := range o.stands {
			if !strings.Contains(r.caddyfile+" "+r.meaning, alt) {
				problems = append(problems, fmt.Sprintf("%s: the row does not name the alternative %s", at, alt))
			}
		}
	}
	for _, o := range jsonOptions(root, "") {
		if _, ok := seen[o.path]; !ok {
			problems = append(problems, fmt.Sprintf("%s: option %s of %s (%s) has no row", optionsDoc, o.path, root, o.typ))
		}
	}
	return problems
}

// TestOptionsDoc holds the option reference to the configuration types:
// the a2a_health table to Health, every other table to Handler.
func TestOptionsDoc(t *testing.T) {
	doc, err := os.ReadFile(optionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := referenceRows(t, string(doc))
	var handler, health []docRow
	for _, r := range rows {
		if strings.Contains(r.table, "a2a_health") {
			health = append(health, r)
		} else {
			handler = append(handler, r)
		}
	}
	if len(handler) == 0 || len(health) == 0 {
		t.Fatalf("%s: found %d rows of the a2a handler and %d of a2a_health under ## Option reference", optionsDoc, len(handler), len(health))
	}
	for _, p := range append(checkReference(handler, reflect.TypeFor[Handler]()), checkReference(health, reflect.TypeFor[Health]())...) {
		t.Error(p)
	}
}

// TestOptionsDocCheck shows that the check finds what it is for: an
// option without a row, a row without an option, a path twice, and the
// rest, on a small configuration type.
func TestOptionsDocCheck(t *testing.T) {
	type inner struct {
		Timeout caddy.Duration  `json:"timeout,omitempty"`
		Raw     json.RawMessage `json:"raw,omitempty"`
	}
	type embedded struct {
		Flat string `json:"flat,omitempty"`
	}
	type config struct {
		embedded
		Name    string            `json:"name"`
		Inner   *inner            `json:"inner,omitempty"`
		List    []inner           `json:"list,omitempty"`
		Map     map[string]*inner `json:"map,omitempty"`
		Flows   *a2a.OAuthFlows   `json:"flows,omitempty"`
		Skipped string            `json:"-"`
	}
	row := func(path, typ string) docRow {
		return docRow{caddyfile: "`x`", path: path, typ: typ, defaults: "none", meaning: "What it is."}
	}
	flow := row("flows.<flow>", "object")
	flow.caddyfile = "`flow authorization_code|client_credentials|device_code|implicit|password`"
	complete := []docRow{
		row("flat", "string"), row("name", "string"),
		row("inner", "object"), row("inner.timeout", "duration"), row("inner.raw", "JSON"),
		row("list", "list of objects"), row("list[].timeout", "duration"), row("list[].raw", "JSON"),
		row("map", "map of name to object"), row("map.<name>.timeout", "duration"), row("map.<name>.raw", "JSON"),
		row("flows", "object"), flow,
		row("flows.<flow>.authorization_url", "string"), row("flows.<flow>.device_authorization_url", "string"),
		row("flows.<flow>.token_url", "string"), row("flows.<flow>.refresh_url", "string"),
		row("flows.<flow>.scopes", "map of scope to description"), row("flows.<flow>.pkce_required", "bool"),
	}
	root := reflect.TypeFor[config]()
	if problems := checkReference(complete, root); len(problems) > 0 {
		t.Fatalf("complete rows: %q", problems)
	}
	tests := []struct {
		name string
		edit func([]docRow) []docRow
		want string
	}{
		{"missing", func(r []docRow) []docRow { return slices.Delete(r, 3, 4) }, "option inner.timeout of"},
		{"unknown", func(r []docRow) []docRow { return append(r, row("inner.retries", "count")) }, "inner.retries: no such option"},
		{"twice", func(r []docRow) []docRow { return append(r, row("name", "string")) }, "name: documented again"},
		{"empty cell", func(r []docRow) []docRow { r[1].defaults = ""; return r }, "name: the default cell is empty"},
		{"wrong type", func(r []docRow) []docRow { r[3].typ = "count"; return r }, `inner.timeout: type "count"`},
		{"alternative unnamed", func(r []docRow) []docRow { r[12].caddyfile = "`flow <flow>`"; return r }, "does not name the alternative device_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := checkReference(tt.edit(slices.Clone(complete)), root)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems %q, want one with %q", problems, tt.want)
			}
		})
	}
}
