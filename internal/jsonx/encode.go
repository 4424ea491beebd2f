package jsonx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The encoder's primitives: the agent's hot results (tasks, messages,
// stream events) are written with them by hand into a caller's buffer: no
// reflection, and no allocation beyond the buffer's growth (except for
// maps of more than 16 keys, whose keys are sorted on the heap, and values
// of types other than decoded JSON, left to encoding/json).
// Output never contains a raw newline, so an SSE writer can frame it as a
// single data line. A json.RawMessage is trusted to be valid JSON.

// safeASCII marks the bytes a JSON string may hold unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is safe to embed in JavaScript.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendKey writes `,"key":`: a member after the first. key is a
// constant of the caller's, which needs no escaping.
func AppendKey(dst []byte, key string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendStrings writes ss as a JSON array of strings.
func AppendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// AppendBase64 writes b as a JSON string in standard base64, as
// encoding/json writes a []byte.
func AppendBase64(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendFloat formats like encoding/json: shortest representation, exponent
// form only for very small or very large magnitudes.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("unsupported number %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// AppendRaw writes already-encoded JSON as is; it is compacted (and so
// checked) only when it holds a line break, to keep the output on one line.
func AppendRaw(dst []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(dst, raw...), nil
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, fmt.Errorf("invalid raw JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// AppendValue writes v, a decoded JSON value (or a json.RawMessage), on
// one line, map keys sorted so that equal values encode to equal bytes;
// a value of another type is left to encoding/json. It fails for what JSON
// cannot hold (NaN, infinities, maps whose keys are not strings), so that
// such a value can be refused where it is made instead of breaking every
// later answer that carries it.
func AppendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		return appendFloat(dst, v, 64)
	case float32:
		return appendFloat(dst, float64(v), 32)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case json.Number:
		if v == "" {
			return append(dst, '0'), nil
		}
		return append(dst, v...), nil
	case json.RawMessage:
		return AppendRaw(dst, v)
	case map[string]any:
		return appendObject(dst, v)
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendValue(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		return AppendStrings(dst, v), nil
	case map[string]string:
		return AppendStringMap(dst, v), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func appendObject(dst []byte, m map[string]any) ([]byte, error) {
	var buf [16]string
	dst = append(dst, '{')
	for i, k := range sortedKeys(m, buf[:0]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(AppendString(dst, k), ':')
		var err error
		if dst, err = AppendValue(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// AppendStringMap writes m as a JSON object, keys sorted.
func AppendStringMap(dst []byte, m map[string]string) []byte {
	var buf [16]string
	dst = append(dst, '{')
	for i, k := range sortedKeys(m, buf[:0]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(AppendString(dst, k), ':')
		dst = AppendString(dst, m[k])
	}
	return append(dst, '}')
}

// sortedKeys returns m's keys in order, in keys' storage when it is large
// enough (a caller's array keeps small maps off the heap).
func sortedKeys[V any](m map[string]V, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
