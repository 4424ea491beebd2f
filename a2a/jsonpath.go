package a2a

import (
	"encoding/json"
	"strconv"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// Field paths such as "params.message.parts[0]" are built only when a
// field turns out to be invalid: each converter reports an InvalidParams
// whose Field is relative to the object it converts ("" for the object
// itself), and callers prefix their own member name as the error travels
// up. The decoding of valid input builds no strings.

// within prefixes e's field with the member name seg of the enclosing object.
func within(e *Error, seg string) *Error {
	switch {
	case e == nil:
	case e.Field == "":
		e.Field = seg
	case e.Field[0] == '[':
		e.Field = seg + e.Field
	default:
		e.Field = seg + "." + e.Field
	}
	return e
}

// withinIndex prefixes e's field with element i of the array member name.
func withinIndex(e *Error, name string, i int) *Error {
	if e == nil {
		return nil
	}
	return within(e, name+"["+strconv.Itoa(i)+"]")
}

// typeError turns an encoding/json type error about doc into an
// invalid-params error naming the offending field with its array indices.
func typeError(doc []byte, te *json.UnmarshalTypeError) *Error {
	return InvalidParams(jsonx.PathAt(doc, int(te.Offset)), "must be "+jsonKind(te.Type.Kind().String())+", not "+te.Value)
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int32", "int64", "int", "uint32", "uint64":
		return "an integer that fits in " + kind
	case "float64", "float32":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}
