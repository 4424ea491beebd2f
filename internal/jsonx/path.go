package jsonx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// PathAt returns the path, relative to doc's root, of the value whose first
// token ends at offset (where encoding/json reports a type error, and
// Check a Violation): "params.message.parts[0]", "" for the root or for a
// document that is not JSON. It is meant for errors: it reads doc again,
// with encoding/json's tokenizer.
func PathAt(doc []byte, offset int) string {
	type frame struct {
		array bool
		count int // elements started so far, when array
		key   string
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // a number beyond a float64 (1e400) is a token too
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		d, isDelim := tok.(json.Delim)
		if isDelim && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			expectKey = len(stack) > 0 && !stack[len(stack)-1].array
			continue
		}
		if expectKey {
			stack[len(stack)-1].key, _ = tok.(string)
			expectKey = false
			continue
		}
		// tok starts a value: an element or member of the top frame.
		if len(stack) > 0 && stack[len(stack)-1].array {
			stack[len(stack)-1].count++
		}
		if dec.InputOffset() >= int64(offset) {
			var b strings.Builder
			for _, f := range stack {
				if f.array {
					b.WriteByte('[')
					b.WriteString(strconv.Itoa(f.count - 1))
					b.WriteByte(']')
					continue
				}
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
			return b.String()
		}
		if isDelim {
			stack = append(stack, frame{array: d == '['})
			expectKey = d == '{'
			continue
		}
		expectKey = len(stack) > 0 && !stack[len(stack)-1].array
	}
}
