package confval_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/confval"
)

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		json string
		want time.Duration
	}{
		{`300000000`, 300 * time.Millisecond},
		{`"300ms"`, 300 * time.Millisecond},
		{`"1.5h"`, 90 * time.Minute},
		{`"2h45m"`, 2*time.Hour + 45*time.Minute},
		{`"2d"`, 48 * time.Hour},
		{`"1.5d"`, 36 * time.Hour},
		{`"1d12h"`, 36 * time.Hour},
		{`"1h1d"`, 25 * time.Hour},
		{`"-1d"`, -24 * time.Hour},
		{`"0"`, 0},
		{`"1m30s"`, 90 * time.Second},
		{`"1d"`, 24 * time.Hour},
		{`2000000000`, 2 * time.Second},
	} {
		var d confval.Duration
		if err := json.Unmarshal([]byte(tc.json), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.json, time.Duration(d), err, tc.want)
		}
	}
	for _, bad := range []string{`"5"`, `"d"`, `"1x"`, `"1dd"`, `"soon"`, `""`, `true`, `1.5`,
		`"` + strings.Repeat("1", 1100) + `s"`, `"` + strings.Repeat("0", 1024) + `1s"`} {
		var d confval.Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%.20s: read as %v", bad, time.Duration(d))
		}
	}
}

// A duration is written as integer nanoseconds, as Caddy writes the
// configuration it adapts.
func TestDurationWrittenAsNanoseconds(t *testing.T) {
	b, err := json.Marshal(struct {
		Leeway confval.Duration `json:"leeway"`
	}{confval.Duration(time.Minute)})
	if err != nil || string(b) != `{"leeway":60000000000}` {
		t.Errorf("written as %s, %v", b, err)
	}
}
