package pbconv

// A part's data the model holds as already-encoded JSON (an upstream's
// answer, kept as mapping read it) is written straight in the wire form of
// a google.protobuf.Value, in one pass over the JSON, and carried as the
// Value's unknown fields, which proto.Marshal writes out unchanged: the
// client reads them as the Value's own fields. Through protojson, a tree of
// structpb messages and its marshaling, a 1 KiB answer cost about 800
// allocations and two thirds of a gRPC SendMessage's conversion; this way
// it costs two.
//
// The JSON is read as encoding/json reads it: a member named twice keeps
// its last value (a proto map's last entry wins too), and a string's bytes
// that are not UTF-8, or an escaped lone surrogate, become U+FFFD (proto
// strings must be UTF-8). Nesting is bounded by a2a.MaxJSONDepth, and the
// encoding is at most a small multiple of the JSON's length (11 bytes for
// the 2 of `1,` in a list).

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Field numbers of google.protobuf.Value, Struct (and its map entries) and
// ListValue.
const (
	valueNull   protowire.Number = 1 // enum NullValue, varint
	valueNumber protowire.Number = 2 // double, fixed64
	valueString protowire.Number = 3
	valueBool   protowire.Number = 4 // varint
	valueStruct protowire.Number = 5
	valueList   protowire.Number = 6
	structField protowire.Number = 1 // map<string, Value> fields
	entryKey    protowire.Number = 1
	entryValue  protowire.Number = 2
	listValue   protowire.Number = 1 // repeated Value values
)

// rawValue converts the JSON document doc to a Value.
func rawValue(doc []byte) (*structpb.Value, error) {
	e := encoders.Get().(*jsonEncoder)
	defer e.release()
	e.src = doc
	if err := e.value(0); err != nil {
		return nil, err
	}
	if e.skipSpace(); e.pos < len(doc) {
		return nil, e.syntaxError("after the value")
	}
	v := new(structpb.Value)
	v.ProtoReflect().SetUnknown(protoreflect.RawFields(e.bytes()))
	return v, nil
}

// jsonEncoder writes the Value a JSON document is. A length-delimited
// field's length is known only once the field is written: each gets one
// byte for it as it begins, enough for most (under 128 bytes); a longer one
// is noted in long, and bytes writes its length in full, in place.
type jsonEncoder struct {
	src  []byte
	pos  int
	out  []byte
	open []openField // the fields being written, innermost last
	long []fieldLength
}

type openField struct {
	at int // where in out its length goes
	// extra is what its long fields' lengths add to it: their bytes beyond
	// the one each has in out.
	extra int
}

type fieldLength struct{ at, n int }

var encoders = sync.Pool{New: func() any { return new(jsonEncoder) }}

// An encoder that grew past these for a large document is not kept.
const (
	maxPooledBytes   = 64 << 10
	maxPooledLengths = 4 << 10
)

func (e *jsonEncoder) release() {
	if cap(e.out) > maxPooledBytes || cap(e.long) > maxPooledLengths {
		return
	}
	*e = jsonEncoder{out: e.out[:0], open: e.open[:0], long: e.long[:0]}
	encoders.Put(e)
}

// begin starts length-delimited field f.
func (e *jsonEncoder) begin(f protowire.Number) {
	e.out = protowire.AppendTag(e.out, f, protowire.BytesType)
	e.open = append(e.open, openField{at: len(e.out)})
	e.out = append(e.out, 0)
}

// end ends the field begun last.
func (e *jsonEncoder) end() {
	f := e.open[len(e.open)-1]
	e.open = e.open[:len(e.open)-1]
	n := len(e.out) - f.at - 1 + f.extra
	if n < 0x80 {
		e.out[f.at] = byte(n)
		return
	}
	e.long = append(e.long, fieldLength{at: f.at, n: n})
	if len(e.open) > 0 {
		e.open[len(e.open)-1].extra += f.extra + protowire.SizeVarint(uint64(n)) - 1
	}
}

// bytes is the encoding, the long fields' lengths in place.
func (e *jsonEncoder) bytes() []byte {
	if len(e.long) == 0 {
		return bytes.Clone(e.out)
	}
	// long is in the order the fields ended, inner ones first.
	slices.SortFunc(e.long, func(a, b fieldLength) int { return a.at - b.at })
	size := len(e.out)
	for _, l := range e.long {
		size += protowire.SizeVarint(uint64(l.n)) - 1
	}
	b := make([]byte, 0, size)
	from := 0
	for _, l := range e.long {
		b = append(b, e.out[from:l.at]...)
		b = protowire.AppendVarint(b, uint64(l.n))
		from = l.at + 1
	}
	return append(b, e.out[from:]...)
}

var errUnexpectedEnd = errors.New("unexpected end of JSON")

func (e *jsonEncoder) syntaxError(where string) error {
	if e.pos >= len(e.src) {
		return errUnexpectedEnd
	}
	return fmt.Errorf("invalid character %q %s, at offset %d of the JSON", e.src[e.pos], where, e.pos)
}

func (e *jsonEncoder) skipSpace() {
	for e.pos < len(e.src) {
		switch e.src[e.pos] {
		case ' ', '\t', '\n', '\r':
			e.pos++
		default:
			return
		}
	}
}

// next skips white space and reports the byte there (0 at the end).
func (e *jsonEncoder) next() byte {
	if e.skipSpace(); e.pos < len(e.src) {
		return e.src[e.pos]
	}
	return 0
}

// value writes the fields of the Value at pos, within depth objects and
// arrays.
func (e *jsonEncoder) value(depth int) error {
	switch c := e.next(); c {
	case '{', '[':
		if depth == a2a.MaxJSONDepth {
			return fmt.Errorf("the JSON nests deeper than %d, at offset %d", a2a.MaxJSONDepth, e.pos)
		}
		e.pos++
		if c == '{' {
			return e.object(depth + 1)
		}
		return e.array(depth + 1)
	case '"':
		e.begin(valueString)
		err := e.string()
		e.end()
		return err
	case 't':
		return e.literal("true", valueBool, 1)
	case 'f':
		return e.literal("false", valueBool, 0)
	case 'n':
		return e.literal("null", valueNull, 0)
	default:
		return e.number()
	}
}

// object writes a struct_value, pos after its '{'.
func (e *jsonEncoder) object(depth int) error {
	e.begin(valueStruct)
	if e.next() == '}' {
		e.pos++
		e.end()
		return nil
	}
	for {
		if e.next() != '"' {
			return e.syntaxError("looking for the beginning of an object key")
		}
		e.begin(structField)
		e.begin(entryKey)
		if err := e.string(); err != nil {
			return err
		}
		e.end()
		if e.next() != ':' {
			return e.syntaxError("after an object key")
		}
		e.pos++
		e.begin(entryValue)
		if err := e.value(depth); err != nil {
			return err
		}
		e.end()
		e.end()
		switch e.next() {
		case ',':
			e.pos++
		case '}':
			e.pos++
			e.end()
			return nil
		default:
			return e.syntaxError("after an object member")
		}
	}
}

// array writes a list_value, pos after its '['.
func (e *jsonEncoder) array(depth int) error {
	e.begin(valueList)
	if e.next() == ']' {
		e.pos++
		e.end()
		return nil
	}
	for {
		e.begin(listValue)
		if err := e.value(depth); err != nil {
			return err
		}
		e.end()
		switch e.next() {
		case ',':
			e.pos++
		case ']':
			e.pos++
			e.end()
			return nil
		default:
			return e.syntaxError("after an array element")
		}
	}
}

// literal writes true, false or null as varint field f.
func (e *jsonEncoder) literal(word string, f protowire.Number, v uint64) error {
	if len(e.src)-e.pos < len(word) || string(e.src[e.pos:e.pos+len(word)]) != word {
		return e.syntaxError("looking for the beginning of a value")
	}
	e.pos += len(word)
	e.out = protowire.AppendTag(e.out, f, protowire.VarintType)
	e.out = protowire.AppendVarint(e.out, v)
	return nil
}

// number writes the JSON number at pos as a number_value: its grammar is
// JSON's (strconv would take more, such as hexadecimal or "Inf").
func (e *jsonEncoder) number() error {
	start := e.pos
	if e.pos < len(e.src) && e.src[e.pos] == '-' {
		e.pos++
	}
	switch {
	case e.pos < len(e.src) && e.src[e.pos] == '0':
		e.pos++
	case e.pos < len(e.src) && e.src[e.pos] >= '1' && e.src[e.pos] <= '9':
		e.digits()
	default:
		return e.syntaxError("looking for the beginning of a value")
	}
	if e.pos < len(e.src) && e.src[e.pos] == '.' {
		e.pos++
		if !e.digits() {
			return e.syntaxError("after a decimal point")
		}
	}
	if e.pos < len(e.src) && (e.src[e.pos] == 'e' || e.src[e.pos] == 'E') {
		e.pos++
		if e.pos < len(e.src) && (e.src[e.pos] == '+' || e.src[e.pos] == '-') {
			e.pos++
		}
		if !e.digits() {
			return e.syntaxError("in an exponent")
		}
	}
	f, err := strconv.ParseFloat(string(e.src[start:e.pos]), 64)
	if err != nil {
		// Only a range error is left: a double cannot hold the number.
		return fmt.Errorf("the number %s at offset %d does not fit a double", e.src[start:e.pos], start)
	}
	e.out = protowire.AppendTag(e.out, valueNumber, protowire.Fixed64Type)
	e.out = protowire.AppendFixed64(e.out, math.Float64bits(f))
	return nil
}

// digits skips a run of digits, reporting whether there was one.
func (e *jsonEncoder) digits() bool {
	start := e.pos
	for e.pos < len(e.src) && e.src[e.pos] >= '0' && e.src[e.pos] <= '9' {
		e.pos++
	}
	return e.pos > start
}

// string appends the text of the JSON string at pos.
func (e *jsonEncoder) string() error {
	e.pos++ // the opening quote
	for {
		run := e.pos
		for e.pos < len(e.src) {
			if c := e.src[e.pos]; c < utf8.RuneSelf && c >= ' ' && c != '"' && c != '\\' {
				e.pos++
				continue
			}
			break
		}
		e.out = append(e.out, e.src[run:e.pos]...)
		if e.pos >= len(e.src) {
			return errUnexpectedEnd
		}
		switch c := e.src[e.pos]; {
		case c == '"':
			e.pos++
			return nil
		case c == '\\':
			if err := e.escape(); err != nil {
				return err
			}
		case c < ' ':
			return e.syntaxError("in a string")
		default:
			r, size := utf8.DecodeRune(e.src[e.pos:])
			e.out = utf8.AppendRune(e.out, r) // RuneError for a byte that is not UTF-8
			e.pos += size
		}
	}
}

// escape appends the character of the escape sequence at pos.
func (e *jsonEncoder) escape() error {
	if e.pos+1 >= len(e.src) {
		return errUnexpectedEnd
	}
	e.pos++
	c := e.src[e.pos]
	e.pos++
	switch c {
	case '"', '\\', '/':
		e.out = append(e.out, c)
	case 'b':
		e.out = append(e.out, '\b')
	case 'f':
		e.out = append(e.out, '\f')
	case 'n':
		e.out = append(e.out, '\n')
	case 'r':
		e.out = append(e.out, '\r')
	case 't':
		e.out = append(e.out, '\t')
	case 'u':
		r, ok := e.hex4()
		if !ok {
			return e.syntaxError("in a \\u escape")
		}
		if utf16.IsSurrogate(r) {
			// A pair makes one character; a lone half is U+FFFD.
			low, ok := e.lowSurrogate()
			r = utf16.DecodeRune(r, low)
			if ok && r == utf8.RuneError {
				e.pos -= 6 // the second escape is a character of its own
			}
		}
		e.out = utf8.AppendRune(e.out, r)
	default:
		e.pos--
		return e.syntaxError("in a string escape")
	}
	return nil
}

// lowSurrogate reads the \uXXXX at pos that may end a surrogate pair.
func (e *jsonEncoder) lowSurrogate() (rune, bool) {
	if len(e.src)-e.pos < 6 || e.src[e.pos] != '\\' || e.src[e.pos+1] != 'u' {
		return utf8.RuneError, false
	}
	e.pos += 2
	r, ok := e.hex4()
	if !ok {
		e.pos -= 2
	}
	return r, ok
}

// hex4 reads four hexadecimal digits at pos.
func (e *jsonEncoder) hex4() (rune, bool) {
	if len(e.src)-e.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range e.src[e.pos : e.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	e.pos += 4
	return r, true
}
