package authn

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration that JSON gives as integer nanoseconds or as
// a string in Caddy's syntax: Go's ("1m30s"), and d for days of 24 hours
// ("1d"). It is written as integer nanoseconds.
type Duration time.Duration

// UnmarshalJSON reads nanoseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return json.Unmarshal(b, (*time.Duration)(d))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// maxDurationBytes bounds a duration string, as Caddy does.
const maxDurationBytes = 1024

// parseDuration reads a duration as caddy.ParseDuration does, step for
// step (a fuzz test holds them equal): each number followed by d becomes
// that many times 24h, and the result is read by time.ParseDuration.
func parseDuration(s string) (time.Duration, error) {
	if len(s) > maxDurationBytes {
		return 0, errors.New("parsing duration: input string too long")
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
