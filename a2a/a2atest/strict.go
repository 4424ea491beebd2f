package a2atest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadStrict reads the JSON document b as a strict parser in front of the
// agent would: member names are matched exactly (its objects are maps), an
// object that names a member twice is an error rather than its last value
// winning, and numbers stay as written (json.Number).
func ReadStrict(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := readStrictValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("a2atest: more than one JSON value")
	}
	return v, nil
}

func readStrictValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for d.More() {
			name, err := d.Token()
			if err != nil {
				return nil, err
			}
			key := name.(string) // a member name: the decoder allows nothing else
			if _, twice := obj[key]; twice {
				return nil, fmt.Errorf("a2atest: the member %q is named twice", key)
			}
			if obj[key], err = readStrictValue(d); err != nil {
				return nil, err
			}
		}
		_, err := d.Token() // }
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for d.More() {
			v, err := readStrictValue(d)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := d.Token() // ]
		return arr, err
	}
	return tok, nil
}

// LookAlikes returns names that encoding/json, which ignores case, would
// take for name: name in capitals, and with a long s (U+017F) or a Kelvin
// sign (U+212A) for its first s or k.
func LookAlikes(name string) []string {
	out := []string{strings.ToUpper(name)}
	if i := strings.IndexAny(name, "sk"); i >= 0 {
		alike := "\u017f"
		if name[i] == 'k' {
			alike = "\u212a"
		}
		out = append(out, name[:i]+alike+name[i+1:])
	}
	return out
}
