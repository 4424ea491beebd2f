package jsonx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// UnmarshalKeepingIntegers decodes JSON into v as encoding/json does
// (numbers as float64, so that expressions compute with them), except
// integers a float64 cannot hold exactly (beyond 2^53, such as 64-bit ids):
// those stay json.Number, which the encoder writes unchanged. Documents
// without such a long digit run take the plain path and cost nothing more.
// An upstream's answer is read so, and so is a part's data read back from
// a stored task.
//
// A valid UTF-8 document is read by the hand reader (Reader.Any), which
// gives what encoding/json gives without its reflection; anything it
// gives up on, and every error, is encoding/json's.
func UnmarshalKeepingIntegers(body []byte, v *any) error {
	valid := Valid(body)
	if !valid || !LongDigitRun(body) {
		if valid && utf8.Valid(body) {
			r := NewReader(body)
			if val, ok := r.Any(); ok {
				*v = val
				return nil
			}
		}
		return json.Unmarshal(body, v)
	}
	// A Decoder reads the first value only: the body is known to hold one.
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	*v = floatsWhereExact(*v)
	return nil
}

// LongDigitRun reports whether body has 16 digits in a row, the fewest
// an integer beyond 2^53 needs: a document without one decodes alike with
// UnmarshalKeepingIntegers and encoding/json. Digits inside strings count
// too: they only send the body down the careful path.
func LongDigitRun(body []byte) bool {
	run := 0
	for _, b := range body {
		if b >= '0' && b <= '9' {
			if run++; run >= 16 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// floatsWhereExact turns every json.Number in v into a float64, except
// integers that a float64 would round.
func floatsWhereExact(v any) any {
	switch v := v.(type) {
	case json.Number:
		if isIntegerLiteral(string(v)) {
			if i, err := strconv.ParseInt(string(v), 10, 64); err == nil && -(1<<53) <= i && i <= 1<<53 {
				return float64(i)
			}
			return v // beyond 2^53, or beyond int64
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = floatsWhereExact(e)
		}
	case []any:
		for i, e := range v {
			v[i] = floatsWhereExact(e)
		}
	}
	return v
}

func isIntegerLiteral(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
