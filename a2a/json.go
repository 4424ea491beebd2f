package a2a

import (
	"fmt"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// The JSON primitives are internal/jsonx's; what is here is A2A's use of
// them.

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
