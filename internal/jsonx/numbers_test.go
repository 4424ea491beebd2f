package jsonx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzUnmarshalKeepingIntegers: a document without a long digit run
// decodes as encoding/json decodes it: the same value, which encodes to the
// same bytes (-0 included), or an error both times.
func FuzzUnmarshalKeepingIntegers(f *testing.F) {
	for _, seed := range append(seeds,
		`{"a":1,"a":{"b":[true,null]},"c":"\u00e9\ud83d\ude00","d":-0,"e":2.5e-3}`,
		`{"k\u0065y":1}`, "\"\xff\"", `{"id":12345678901234567890,"n":1.5}`, ` [1, 2] `, `1e400`, `{"a":}`,
	) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got any
		err := UnmarshalKeepingIntegers(body, &got)
		if LongDigitRun(body) { // the careful path, as before
			if err == nil && !json.Valid(body) {
				t.Fatalf("%q is no JSON, and decodes to %#v", body, got)
			}
			return
		}
		var want any
		wantErr := json.Unmarshal(body, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json's %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decodes to\n%#v\nencoding/json to\n%#v", body, got, want)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Fatalf("%q decodes to %s, encoding/json to %s", body, a, b)
		}
	})
}
