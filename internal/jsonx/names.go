package jsonx

import "strings"

// ProtoName is the proto field name whose JSON name is name: an underscore
// before each capital, which is lower-cased (message_id for messageId).
func ProtoName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// JSONName is the JSON name protoc gives a proto field name: underscores
// dropped, the letter after each one upper-cased.
func JSONName(field string) string {
	if strings.IndexByte(field, '_') < 0 {
		return field
	}
	b := make([]byte, 0, len(field))
	upper := false
	for i := 0; i < len(field); i++ {
		c := field[i]
		switch {
		case c == '_':
			upper = true
			continue
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		upper = false
		b = append(b, c)
	}
	return string(b)
}
