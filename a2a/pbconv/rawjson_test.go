package pbconv_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
)

// rawData is the data of a part holding doc as already-encoded JSON, as a
// client reads it, or the conversion's error.
func rawData(t testing.TB, doc string) (*structpb.Value, error) {
	t.Helper()
	task := &a2a.Task{ID: "t", Artifacts: []a2a.Artifact{{ArtifactID: "a",
		Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(doc)}}}}}
	out, err := pbconv.Task(task)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	read := new(a2apb.Task)
	if err := proto.Unmarshal(b, read); err != nil {
		t.Fatalf("a client cannot read the answer: %v", err)
	}
	return read.Artifacts[0].Parts[0].GetData(), nil
}

// asEncodingJSON is doc as encoding/json reads it, made a Value.
func asEncodingJSON(t testing.TB, doc string) (*structpb.Value, error) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return nil, err
	}
	out, err := structpb.NewValue(v)
	if err != nil {
		t.Fatalf("structpb cannot take what encoding/json read of %q: %v", doc, err)
	}
	return out, nil
}

// TestRawData: a part's already-encoded JSON reaches a gRPC client as
// encoding/json reads it, in every case where protojson (which converted it
// before) refused what JSON-RPC's answer carries: a member named twice,
// bytes that are not UTF-8, a lone surrogate. What no Value can hold is an
// error naming where.
func TestRawData(t *testing.T) {
	for _, doc := range []string{
		`{"city":"Paris","temp":17.5,"ok":true,"none":null,"tags":["a","b",[]],"empty":{}}`,
		` [ 1 , -0.5e-3 , 1E+2 , "x" ] `,
		`"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"`,
		`{"a":1,"a":2}`,
		"\"\xff\xfeok\"",
		`"\ud800 and \udc00 and \ud800\u0041"`,
		`0`, `-0`, `true`, `false`, `null`,
		`{"` + strings.Repeat("k", 300) + `":"` + strings.Repeat("v", 70000) + `"}`,
		strings.Repeat("[", a2a.MaxJSONDepth) + strings.Repeat("]", a2a.MaxJSONDepth),
	} {
		want, err := asEncodingJSON(t, doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rawData(t, doc)
		if err != nil {
			t.Errorf("%.80q: %v", doc, err)
			continue
		}
		if !proto.Equal(got, want) {
			t.Errorf("%.80q:\n got %v\nwant %v", doc, got, want)
		}
	}
	for _, tc := range []struct{ doc, err string }{
		{``, "unexpected end"},
		{`{"a":1,}`, `invalid character '}' looking for the beginning of an object key, at offset 7`},
		{`[1 2]`, "after an array element"},
		{`{"a" 1}`, "after an object key"},
		{`01`, "after the value"},
		{`1.x`, "after a decimal point"},
		{`1e`, "unexpected end"},
		{`-`, "unexpected end"},
		{`tru`, "looking for the beginning of a value"},
		{`"a` + "\n" + `"`, "in a string"},
		{`"\x"`, "in a string escape"},
		{`"\u12"`, `in a \u escape`},
		{`1e400`, "does not fit a double"},
		{`NaN`, "looking for the beginning of a value"},
		{strings.Repeat("[", a2a.MaxJSONDepth+1) + strings.Repeat("]", a2a.MaxJSONDepth+1), "nests deeper than 64"},
	} {
		_, err := rawData(t, tc.doc)
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "data") {
			t.Errorf("%.40q: error %v, want one with %q naming the data", tc.doc, err, tc.err)
		}
	}
}

// FuzzRawData: whatever JSON a part holds, a client reads what
// encoding/json reads of it, or the conversion fails where encoding/json
// fails (or nests deeper than a2a.MaxJSONDepth); never a panic.
func FuzzRawData(f *testing.F) {
	f.Add(string(itemJSON))
	for _, doc := range []string{`{"a":[1,{"b":null}],"c":"\u00e9"}`, `"\ud83d\ude00"`, `[]`, `{"a":1,"a":2}`, "\"\xff\"", `1e400`, `[[[[]]]]`} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, err := rawData(t, doc)
		want, wantErr := asEncodingJSON(t, doc)
		switch {
		case err != nil && wantErr == nil && strings.Contains(err.Error(), "nests deeper"):
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%q: error %v, encoding/json's %v", doc, err, wantErr)
		case err == nil && !proto.Equal(got, want):
			t.Fatalf("%q:\n got %v\nwant %v", doc, got, want)
		}
	})
}
