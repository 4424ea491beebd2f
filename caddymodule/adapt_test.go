package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestCaddyfileAdapt runs the Caddyfile adapter over testdata/*.caddyfiletest.
// Each fixture is a Caddyfile, a line of ten dashes, then either the JSON
// the adapter must produce or a substring of the error it must return.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.caddyfiletest"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			caddyfileText, expected, ok := strings.Cut(string(data), "----------")
			if !ok {
				t.Fatalf("%s: no ---------- line between the Caddyfile and the expected result", file)
			}
			caddyfileText = strings.TrimSpace(caddyfileText) + "\n"
			expected = strings.TrimSpace(expected)

			if strings.HasPrefix(expected, "{") {
				if !caddytest.CompareAdapt(t, file, caddyfileText, "caddyfile", expected) {
					t.Errorf("%s: the adapted JSON differs from the fixture (diff above)", file)
				}
				return
			}
			_, _, err = caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfileText), nil)
			if err == nil {
				t.Fatalf("%s: adapted without error; want one containing %q", file, expected)
			}
			if !strings.Contains(err.Error(), expected) {
				t.Errorf("%s: error %q\ndoes not contain %q", file, err, expected)
			}
		})
	}
}

// TestCaddyfileExample checks that the Caddyfile the README runs adapts
// cleanly: no error and no warning (a warning is, for example, a file that
// `caddy fmt` would change).
func TestCaddyfileExample(t *testing.T) {
	const file = "../Caddyfile.example"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(data, map[string]any{"filename": file})
	if err != nil {
		t.Fatalf("adapting %s: %v", file, err)
	}
	for _, w := range warnings {
		t.Errorf("%s:%d: %s", w.File, w.Line, w.Message)
	}
}
