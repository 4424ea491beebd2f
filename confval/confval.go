// Package confval holds the value types that the configuration structs of
// several packages share, in the JSON forms Caddy's own configuration
// uses, so that the core packages' config types can be the adapter's JSON
// without importing Caddy.
package confval

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// ParseDuration reads a duration as caddy.ParseDuration does, step for
// step (caddymodule's FuzzDurationLikeCaddy holds them equal, quirks
// included): each number followed by d becomes that many times 24h, in
// place, and the result is read by time.ParseDuration.
func ParseDuration(s string) (time.Duration, error) {
	if len(s) > maxDurationText {
		return 0, fmt.Errorf("parsing duration: longer than %d bytes", maxDurationText)
	}
	number, start := false, 0 // whether s[i-1] is part of a number, and where that number starts
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'd' {
			days, err := strconv.ParseFloat(s[start:i], 64)
			if err != nil {
				return 0, fmt.Errorf("parsing duration: days %q: %w", s[start:i], err)
			}
			s = s[:start] + strconv.FormatFloat(days*24, 'f', -1, 64) + "h" + s[i+1:]
			i-- // read on from the same index of the new string
			continue
		}
		if !number {
			start = i
		}
		number = '0' <= c && c <= '9' || c == '.' || c == '-' || c == '+'
	}
	return time.ParseDuration(s)
}
