package a2a

import (
	"fmt"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// The JSON primitives are internal/jsonx's; what is here is A2A's use of
// them, and the names other packages read A2A's free-form values with.

// ValidJSON reports whether b is one JSON value, exactly as json.Valid does
// (jsonx.Valid), in a fraction of its time: every request body and every
// upstream JSON answer is checked so.
func ValidJSON(b []byte) bool { return jsonx.Valid(b) }

// UnmarshalKeepingIntegers decodes JSON into v as encoding/json does,
// except integers a float64 cannot hold exactly, which stay json.Number
// (jsonx.UnmarshalKeepingIntegers). An upstream's answer is read so, and
// so is a part's data read back from a stored task.
func UnmarshalKeepingIntegers(body []byte, v *any) error {
	return jsonx.UnmarshalKeepingIntegers(body, v)
}

// AppendJSON writes v as the codecs write a Part's data (jsonx.AppendValue):
// one line, map keys sorted. It fails for what JSON cannot hold (NaN,
// infinities, maps whose keys are not strings), so that such a value can
// be refused where it is made instead of breaking every later answer that
// carries it.
func AppendJSON(dst []byte, v any) ([]byte, error) { return jsonx.AppendValue(dst, v) }

// timeLayout is ISO 8601 in UTC with milliseconds (spec 1.0 §5.6.1).
const timeLayout = "2006-01-02T15:04:05.000Z"

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, timeLayout)
	return append(dst, '"')
}

func appendStringField(dst []byte, key, val string) []byte {
	return jsonx.AppendString(jsonx.AppendKey(dst, key), val)
}

// appendMetadata writes `,"metadata":{...}` when m is set; an empty but
// non-nil map is written as {} (a present, empty google.protobuf.Struct).
func appendMetadata(dst []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return dst, nil
	}
	dst, err := jsonx.AppendValue(jsonx.AppendKey(dst, "metadata"), m)
	if err != nil {
		return dst, fmt.Errorf("metadata: %w", err)
	}
	return dst, nil
}
