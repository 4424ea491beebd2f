package caddymodule

import (
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// A block whose subdirectives each set one field is a list of settings:
// each subdirective is named once, beside the field it sets, and the list
// of valid ones in an error is the list itself.

// setting is one subdirective of a block: its name and how it reads its
// arguments into the field it sets.
type setting struct {
	name string
	read func(d *caddyfile.Dispenser, at string) error
}

// parseSettings reads the block that follows the current line, whose
// subdirectives are settings; those named in repeatable may appear more
// than once.
func parseSettings(d *caddyfile.Dispenser, where string, repeatable []string, settings []setting) error {
	return parseBlock(d, where, repeatable, func(sub, at string) error {
		for _, s := range settings {
			if s.name == sub {
				return s.read(d, at)
			}
		}
		names := make([]string, len(settings))
		for i, s := range settings {
			names[i] = s.name
		}
		return unknownSubdirective(names)
	})
}

// setString sets *p to the one argument.
func setString(p *string) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = oneArg(d, at); return err }
}

// addStrings adds the arguments, one or more, to *p.
func addStrings(p *[]string) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) error {
		args, err := someArgs(d, at)
		*p = append(*p, args...)
		return err
	}
}

// setFlag sets *p for a subdirective without arguments.
func setFlag(p *bool) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = flagArg(d, at); return err }
}

// setDuration sets *p to a positive duration.
func setDuration[D ~int64](p *D) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) error {
		v, err := durationArg(d, at)
		*p = D(v)
		return err
	}
}

// oneOf lists names as "a, b or c".
func oneOf(names []string) string {
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// setBlock sets *p to the block parse reads.
func setBlock[T any](p **T, parse func(*caddyfile.Dispenser, string) (*T, error)) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = parse(d, at); return err }
}

// setCount sets *p to a positive integer.
func setCount(p *int) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = countArg(d, at); return err }
}

// setInt sets *p to an integer.
func setInt(p *int) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = intArg(d, at); return err }
}

// setSize sets *p to a positive size such as 4MiB.
func setSize(p *int64) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) (err error) { *p, err = sizeArg(d, at); return err }
}

// setWindow sets *p to a duration that may be 0, which turns off what it
// bounds.
func setWindow[D ~int64](p **D) func(*caddyfile.Dispenser, string) error {
	return func(d *caddyfile.Dispenser, at string) error {
		w, err := windowArg(d, at)
		if err == nil {
			*p = new(D(*w))
		}
		return err
	}
}
