package mapping

// Reading an upstream's error answers: the detail it gives, the fields it
// complains about, and the arguments a rule asks for.

import (
	"encoding/json"
	"fmt"
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
	s = strings.Join(strings.Fields(s), " ")
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

// fieldProblems are the arguments a 4xx answer's field errors point at.
// With declared arguments, only those count; the upstream's messages are
// shown only with error_detail.
func (sk *Skill) fieldProblems(body []byte, mediaType string) []argProblem {
	var out []argProblem
	for _, f := range fieldErrors(body, mediaType) {
		a := sk.argument(f.name)
		if a == nil || slices.ContainsFunc(out, func(p argProblem) bool { return p.arg.name == f.name }) {
			continue
		}
		p := argProblem{arg: a}
		if sk.errorDetail {
			p.why = problemText(f.msg)
		}
		out = append(out, p)
	}
	return out
}

// argument is the declared argument name, or, when the skill declares
// none, an untyped one; nil for a name the schema does not declare.
func (sk *Skill) argument(name string) *argument {
	if sk.schema != nil && sk.schema.declared {
		return sk.schema.find(name)
	}
	if !argName.MatchString(name) {
		return nil
	}
	return &argument{name: name}
}

// problemText makes an upstream's message fit "the argument x: it ...".
func problemText(msg string) string {
	msg = strings.TrimSuffix(oneLine(msg), ".")
	if msg == "" {
		return ""
	}
	first, _, _ := strings.Cut(msg, " ")
	switch strings.ToLower(first) {
	case "is", "must", "should", "has", "was", "cannot", "can't", "needs", "does":
		return msg
	}
	return "was refused: " + msg
}

// askedProblems reads the value of a rule's ask: a list of argument names,
// a map of name to problem, or one name.
func (sk *Skill) askedProblems(v any) ([]argProblem, error) {
	var out []argProblem
	add := func(name, why string) {
		if a := sk.argument(name); a != nil && !slices.ContainsFunc(out, func(p argProblem) bool { return p.arg.name == name }) {
			out = append(out, argProblem{arg: a, why: problemText(why)})
		}
	}
	switch v := v.(type) {
	case nil:
	case string:
		add(v, "")
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			add(k, messageOf(v[k]))
		}
	default:
		err := forEach(v, func(x any) error {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("a list of argument names holds a %s", kindName(x))
			}
			add(s, "")
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
