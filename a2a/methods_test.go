package a2a_test

import (
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]a2a.Version{"": a2a.V03, "0.3": a2a.V03, "0.3.0": a2a.V03, "1.0": a2a.V10, "1.0.1": a2a.V10} {
		if got, err := a2a.ParseVersion(in); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1", "0.2", "1.1", "2.0", "v1.0"} {
		_, err := a2a.ParseVersion(in)
		if err == nil || err.Code != a2a.CodeVersionNotSupported {
			t.Fatalf("ParseVersion(%q): error %v, want version not supported", in, err)
		}
		if err.Metadata["version"] != in || err.Metadata["supported"] != "0.3, 1.0" {
			t.Errorf("ParseVersion(%q): metadata %v", in, err.Metadata)
		}
	}
}
