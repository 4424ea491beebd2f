package mcp

import segmentjson "github.com/segmentio/encoding/json"

// decodeExactly decodes body, one JSON value and nothing after it, into
// v as the SDK decodes a request: member names matched exactly, where
// encoding/json ignores case. False for a body it cannot decode so.
func decodeExactly(body []byte, v any) bool {
	rest, err := segmentjson.Parse(body, v, segmentjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && firstByte(rest) == 0
}
