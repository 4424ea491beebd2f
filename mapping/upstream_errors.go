package mapping

// Reading an upstream's error answers: the detail it gives and the fields
// it complains about.

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxDetail bounds an upstream's text quoted to the caller.
const maxDetail = 300

// errorDetail is the upstream's own description of an error: the first
// of detail, message, error_description, error (or error.message) and
// title of a JSON object, or a text body; one line, at most maxDetail bytes.
func errorDetail(body []byte, mediaType string) string {
	var s string
	if isJSON(mediaType, body) {
		var obj map[string]any
		if json.Unmarshal(body, &obj) != nil {
			return ""
		}
		for _, k := range []string{"detail", "message", "error_description", "error", "title"} {
			switch v := obj[k].(type) {
			case string:
				s = v
			case map[string]any:
				s, _ = v["message"].(string)
			}
			if s != "" {
				break
			}
		}
	} else if strings.HasPrefix(mediaType, "text/") || mediaType == "" {
		s = string(body)
	}
	return oneLine(s)
}

// oneLine folds white space and cuts s to maxDetail bytes.
func oneLine(s string) string {
	return shorten(strings.Join(strings.Fields(s), " "))
}

// shorten cuts s to maxDetail bytes, at a character's start, marking the
// cut with "…": what a message quotes of a value that may be long.
func shorten(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	cut := maxDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// fieldError is one field an upstream complained about.
type fieldError struct{ name, msg string }

// fieldErrors reads the field errors of a JSON error body in the common
// shapes: {"fields"|"errors": {"name": "message" | ["message", ...]}},
// {"errors"|"invalid_params"|"invalid-params"|"detail": [{"field"|"name"|
// "param"|"loc": ..., "message"|"msg"|"reason"|"detail": ...}]}.
func fieldErrors(body []byte, mediaType string) []fieldError {
	if !isJSON(mediaType, body) {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	var out []fieldError
	for _, k := range []string{"fields", "errors", "invalid_params", "invalid-params", "detail"} {
		switch v := obj[k].(type) {
		case map[string]any:
			for _, name := range slices.Sorted(maps.Keys(v)) {
				out = append(out, fieldError{name: name, msg: messageOf(v[name])})
			}
		case []any:
			for _, item := range v {
				if m, ok := item.(map[string]any); ok {
					if name := fieldName(m); name != "" {
						out = append(out, fieldError{name: name, msg: firstString(m, "message", "msg", "reason", "detail")})
					}
				}
			}
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

func messageOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var msgs []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				msgs = append(msgs, s)
			}
		}
		return strings.Join(msgs, "; ")
	case map[string]any:
		return firstString(v, "message", "msg", "reason")
	}
	return ""
}

// fieldName is the field of one error: field, name or param, or the last
// element of a loc path.
func fieldName(m map[string]any) string {
	if s := firstString(m, "field", "name", "param", "pointer"); s != "" {
		return s[strings.LastIndexAny(s, "/.")+1:]
	}
	if loc, ok := m["loc"].([]any); ok && len(loc) > 0 {
		s, _ := loc[len(loc)-1].(string)
		return s
	}
	return ""
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
