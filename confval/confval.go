// Package confval holds the value types that the configuration structs of
// several packages share, in the JSON forms Caddy's own configuration
// uses, so that the core packages' config types can be the adapter's JSON
// without importing Caddy.
package confval

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that JSON writes as Caddy writes its
// durations: an integer of nanoseconds, or a string such as "300ms",
// "1.5h" or "2d" (Go's units, and d for 24 hours).
type Duration time.Duration

// maxDurationText bounds the text ParseDuration reads.
const maxDurationText = 1024

// UnmarshalJSON reads an integer of nanoseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var ns int64
	if err := json.Unmarshal(b, &ns); err != nil {
		return fmt.Errorf("a duration is an integer of nanoseconds or a string such as \"5m\": %w", err)
	}
	*d = Duration(ns)
	return nil
}

// ParseDuration reads a duration as time.ParseDuration does, and also
// with the unit d (24 hours) in any of its terms: "1d12h", "1.5d".
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > maxDurationText {
		return 0, fmt.Errorf("parsing duration: longer than %d bytes", maxDurationText)
	}
	if !strings.Contains(s, "d") {
		return time.ParseDuration(s)
	}
	var b strings.Builder
	start := 0 // of the number before the next unit
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'd' {
			days, err := strconv.ParseFloat(s[start:i], 64)
			if err != nil {
				return 0, fmt.Errorf("parsing duration %q: %w", s, err)
			}
			b.WriteString(strconv.FormatFloat(days*24, 'f', -1, 64))
			b.WriteByte('h')
			start = i + 1
			continue
		}
		if !isNumberByte(c) && (i+1 == len(s) || isNumberByte(s[i+1])) {
			b.WriteString(s[start : i+1])
			start = i + 1
		}
	}
	b.WriteString(s[start:])
	return time.ParseDuration(b.String())
}

func isNumberByte(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' }
