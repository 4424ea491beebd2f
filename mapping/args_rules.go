package mapping

// The rules an argument's value keeps beyond its type and enum (pattern,
// length, format, range, items, properties), checked before any upstream
// call and published in the argument's JSON Schema.

import (
	"cmp"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// argRules are an argument's rules; each is unset (nil) when not given.
type argRules struct {
	pattern              *regexp.Regexp // Go RE2, matched anywhere in the string as JSON Schema's is
	minLength, maxLength *int           // in characters
	// format is JSON Schema's format; the checkedFormats are checked, the
	// others only published.
	format             string
	minimum, maximum   *bound
	minItems, maxItems *int
	items              *argument  // each element of an array
	properties         []argument // an object's known keys; others pass unchecked
}

// bound is a minimum or a maximum; exclusive leaves the value itself out.
type bound struct {
	value float64
	// integer is the bound exactly, when it is written as an integer: an
	// integer value is compared with it, beyond 2^53 too.
	integer   *int64
	exclusive bool
}

// compare is -1, 0 or +1 as v, a number, is less than, equal to or greater
// than b.
func (b *bound) compare(v any) int {
	if i, ok := v.(int); ok && b.integer != nil {
		return cmp.Compare(int64(i), *b.integer)
	}
	f, _ := toFloat(v)
	return cmp.Compare(f, b.value)
}

// text is b as the file writes it.
func (b *bound) text() string {
	if b.integer != nil {
		return strconv.FormatInt(*b.integer, 10)
	}
	return numberText(b.value)
}

// number is b as published: exact when it is an integer.
func (b *bound) number() any {
	if b.integer != nil {
		return *b.integer
	}
	return b.value
}

// check applies the rules to v, a value of type t; it returns where the
// problem is (path, or a path below it) and what it is, "" for none.
func (r *argRules) check(v any, t argType, path string) (where, what string) {
	switch t {
	case argString:
		return path, r.checkString(v.(string))
	case argInteger, argNumber:
		return path, r.checkNumber(v)
	case argArray:
		return r.checkArray(reflect.ValueOf(v), path)
	case argObject:
		return r.checkObject(v.(map[string]any), path)
	}
	return "", ""
}

func (r *argRules) checkString(s string) string {
	if r.minLength != nil || r.maxLength != nil {
		n := utf8.RuneCountInString(s)
		if what := countProblem(n, r.minLength, r.maxLength, "character"); what != "" {
			return what
		}
	}
	if r.pattern != nil && !r.pattern.MatchString(s) {
		return fmt.Sprintf("must match the pattern %s, not %q", r.pattern, shorten(s))
	}
	if f, checked := checkedFormats[r.format]; checked && !f.valid(s) {
		return fmt.Sprintf("must be %s (format %s), not %q", f.what, r.format, shorten(s))
	}
	return ""
}

// countProblem says how a count of units breaks its bounds, "" when it
// does not.
func countProblem(n int, least, most *int, unit string) string {
	switch {
	case least != nil && n < *least:
		return fmt.Sprintf("must have at least %d %s%s, not %d", *least, unit, plural(*least), n)
	case most != nil && n > *most:
		return fmt.Sprintf("must have at most %d %s%s, not %d", *most, unit, plural(*most), n)
	}
	return ""
}

// checkNumber checks v, an int or a float64, against the range.
func (r *argRules) checkNumber(v any) string {
	switch m := r.minimum; {
	case m == nil:
	case m.exclusive && m.compare(v) <= 0:
		return fmt.Sprintf("must be greater than %s, not %s", m.text(), numberText(v))
	case !m.exclusive && m.compare(v) < 0:
		return fmt.Sprintf("must be at least %s, not %s", m.text(), numberText(v))
	}
	switch m := r.maximum; {
	case m == nil:
	case m.exclusive && m.compare(v) >= 0:
		return fmt.Sprintf("must be less than %s, not %s", m.text(), numberText(v))
	case !m.exclusive && m.compare(v) > 0:
		return fmt.Sprintf("must be at most %s, not %s", m.text(), numberText(v))
	}
	return ""
}

func numberText(v any) string { s, _ := scalarString(v); return s }

func (r *argRules) checkArray(v reflect.Value, path string) (string, string) {
	if what := countProblem(v.Len(), r.minItems, r.maxItems, "item"); what != "" {
		return path, what
	}
	if r.items == nil {
		return "", ""
	}
	for i := range v.Len() {
		if _, where, what := r.items.conform(v.Index(i).Interface(), fmt.Sprintf("%s[%d]", path, i)); what != "" {
			return where, what
		}
	}
	return "", ""
}

func (r *argRules) checkObject(m map[string]any, path string) (string, string) {
	for i := range r.properties {
		p := &r.properties[i]
		sub := path + "." + p.name
		x := m[p.name]
		if x == nil {
			if p.required {
				return sub, isRequired
			}
			continue
		}
		if _, where, what := p.conform(x, sub); what != "" {
			return where, what
		}
	}
	return "", ""
}

// checkedFormats are the formats the agent checks, each with what it is
// in messages; another format is published and not checked.
var checkedFormats = map[string]struct {
	what  string
	valid func(string) bool
}{
	"date": {"a date such as 2026-01-31", func(s string) bool { _, err := time.Parse(time.DateOnly, s); return err == nil }},
	"date-time": {"a date and time such as 2026-01-31T09:30:00Z", func(s string) bool {
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}},
	"email": {"an email address", func(s string) bool {
		addr, err := mail.ParseAddress(s)
		return err == nil && addr.Address == s
	}},
	"uri": {"a URI with a scheme", func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	}},
	"uuid": {"a UUID", uuidPattern.MatchString},
	"ipv4": {"an IPv4 address", func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is4() }},
	"ipv6": {"an IPv6 address", func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is6() && a.Zone() == "" }},
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// schema adds the rules to an argument's JSON Schema.
func (r *argRules) schema(m map[string]any) {
	if r.pattern != nil {
		m["pattern"] = r.pattern.String()
	}
	if r.format != "" {
		m["format"] = r.format
	}
	setInt := func(key string, v *int) {
		if v != nil {
			m[key] = *v
		}
	}
	setInt("minLength", r.minLength)
	setInt("maxLength", r.maxLength)
	setInt("minItems", r.minItems)
	setInt("maxItems", r.maxItems)
	setBound := func(key, exclusiveKey string, b *bound) {
		switch {
		case b == nil:
		case b.exclusive:
			m[exclusiveKey] = b.number()
		default:
			m[key] = b.number()
		}
	}
	setBound("minimum", "exclusiveMinimum", r.minimum)
	setBound("maximum", "exclusiveMaximum", r.maximum)
	if r.items != nil {
		m["items"] = r.items.jsonSchema()
	}
	if len(r.properties) > 0 {
		props := make(map[string]any, len(r.properties))
		var required []string
		for i := range r.properties {
			p := &r.properties[i]
			props[p.name] = p.jsonSchema()
			if p.required {
				required = append(required, p.name)
			}
		}
		m["properties"] = props
		if len(required) > 0 {
			m["required"] = required
		}
	}
}
