package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzValid: Valid says what json.Valid says.
func FuzzValid(f *testing.F) {
	for _, seed := range append(seeds,
		``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5e`, `1E+2`, `-0.0e-0`, `tru`, `truex`, `nul`, `"\u00e9\/"`, `"\u00g0"`,
		"\"\x01\"", "\"\xff\"", `"\x"`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[[[]]]`, ` {} `, `{}{}`, `"`, `"\`) {
		f.Add([]byte(seed))
	}
	f.Add(bytes.Repeat([]byte{'['}, maxScanDepth+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// TestValidDepth: nesting stops where encoding/json's does.
func TestValidDepth(t *testing.T) {
	for _, n := range []int{maxScanDepth, maxScanDepth + 1} {
		b := append(bytes.Repeat([]byte{'['}, n), bytes.Repeat([]byte{']'}, n)...)
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Errorf("%d levels: Valid %v, json.Valid %v", n, got, want)
		}
	}
}

// BenchmarkValid checks a kilobyte of an upstream's JSON, as mapping
// does before keeping it as a part's data, against json.Valid.
func BenchmarkValid(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"items":[`)
	for i := 0; doc.Len() < 1000; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`{"id":12345,"name":"Widget \"deluxe\"","price":19.99,"tags":["a","b"],"stock":true,"note":null}`)
	}
	doc.WriteString(`]}`)
	body := doc.Bytes()
	for _, tc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"Valid", Valid}, {"json.Valid", json.Valid}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !tc.valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// FuzzNestsWithin: for any input NestsWithin returns; for JSON it says
// whether the nesting, as encoding/json's tokens count it, is within max.
func FuzzNestsWithin(f *testing.F) {
	for _, seed := range append(seeds, `[[["]]]]"]]]`, `{"a\"[[[":[{}]}`, `["\\"]`, `"\`, `"[[[`, `]]][[`, `[`) {
		f.Add([]byte(seed), 2)
	}
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		max &= 0xff // a depth: not negative
		got := NestsWithin(b, max)
		if !json.Valid(b) {
			return
		}
		if want := tokenDepth(b) <= max; got != want {
			t.Fatalf("NestsWithin(%q, %d) = %v; its depth is %d", b, max, got, tokenDepth(b))
		}
	})
}

// tokenDepth is the deepest nesting of the JSON b, by encoding/json's
// tokens.
func tokenDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// TestNestsWithin: brackets in strings, escaped quotes, and a body far
// deeper than any parser's stack, in one pass.
func TestNestsWithin(t *testing.T) {
	deep := bytes.Repeat([]byte{'['}, 4<<20)
	tests := []struct {
		body string
		max  int
		want bool
	}{
		{`{"a":[1,{"b":[]}]}`, 4, true},
		{`{"a":[1,{"b":[]}]}`, 3, false},
		{`["[[[[[[", "\"[[[[["]`, 1, true},
		{`["\\", [[]]]`, 2, false},
		{`["\\", [[]]]`, 3, true},
		{`"\`, 0, true},
		{`["[`, 1, true},
		{string(deep), 64, false},
	}
	for _, tt := range tests {
		if got := NestsWithin([]byte(tt.body), tt.max); got != tt.want {
			t.Errorf("NestsWithin(%.40q, %d) = %v, want %v", tt.body, tt.max, got, tt.want)
		}
	}
}
