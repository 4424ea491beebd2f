package authn_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/authn"
)

// TestDurationJSON: a duration in the configuration is integer nanoseconds
// or a string in Caddy's syntax, where d is 24 hours; it is written as
// nanoseconds, as Caddy writes the configuration it adapts.
func TestDurationJSON(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{`"1m30s"`, 90 * time.Second},
		{`"1d"`, 24 * time.Hour},
		{`"1.5d"`, 36 * time.Hour},
		{`"1d12h"`, 36 * time.Hour},
		{`"-1d"`, -24 * time.Hour},
		{`2000000000`, 2 * time.Second},
	} {
		var d authn.Duration
		if err := json.Unmarshal([]byte(tt.in), &d); err != nil || time.Duration(d) != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.in, time.Duration(d), err, tt.want)
		}
	}
	for _, in := range []string{`"soon"`, `"d"`, `"1dd"`, `""`, `1.5`, `true`, `"` + strings.Repeat("0", 1024) + `1s"`} {
		var d authn.Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%.20s: read as %v; want an error", in, time.Duration(d))
		}
	}
	b, err := json.Marshal(authn.JWTConfig{Leeway: authn.Duration(time.Minute)})
	if err != nil || string(b) != `{"leeway":60000000000}` {
		t.Errorf("written as %s, %v", b, err)
	}
}
