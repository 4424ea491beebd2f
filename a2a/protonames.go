package a2a

import (
	"slices"
	"strconv"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// protoNames10 rewrites the member names of a 1.0 request that are proto
// field names (history_length) into their JSON names (historyLength).
// Protocol 1.0 speaks ProtoJSON, whose parsers accept both spellings, and so
// must the agent; it is called only for the rare body that uses them, so
// that the decoder's path stays one name per member. Free-form values
// (metadata, a part's data) are copied as they are: their names are the
// sender's. A member given in both spellings is refused, as ProtoJSON
// parsers refuse it. body has passed checkJSON.
func protoNames10(body []byte) ([]byte, *Error) {
	r := nameRewriter{in: jsonx.NewReader(body), body: body, out: make([]byte, 0, len(body))}
	if err := r.value(false); err != nil {
		return nil, err
	}
	return r.out, nil
}

// nameRewriter copies a document into out, renaming members on the way.
type nameRewriter struct {
	in   *jsonx.Reader // reads body
	body []byte
	out  []byte
}

func (r *nameRewriter) value(free bool) *Error {
	if !free {
		switch r.in.Next() {
		case '{':
			return r.object()
		case '[':
			return r.array()
		}
	}
	r.out = append(r.out, r.in.Skip()...)
	return nil
}

func (r *nameRewriter) object() *Error {
	start := r.in.Offset() + 1
	r.out = append(r.out, '{')
	var names []string
	var err *Error
	r.in.Object(func(raw []byte) bool {
		name := jsonx.JSONName(string(raw))
		if slices.Contains(names, name) {
			err = refusal(r.body, &jsonx.Violation{Offset: start, What: "names the member " + strconv.Quote(name) +
				" twice (ProtoJSON takes the proto field name and the JSON name as one member)"}, inEnvelope)
			return false
		}
		if len(names) > 0 {
			r.out = append(r.out, ',')
		}
		names = append(names, name)
		r.out = append(jsonx.AppendString(r.out, name), ':')
		err = r.value(freeForm(raw))
		return err == nil
	})
	r.out = append(r.out, '}')
	return err
}

func (r *nameRewriter) array() *Error {
	r.out = append(r.out, '[')
	var err *Error
	first := true
	r.in.Array(func() bool {
		if !first {
			r.out = append(r.out, ',')
		}
		first = false
		err = r.value(false)
		return err == nil
	})
	r.out = append(r.out, ']')
	return err
}

// freeForm reports whether a member's value is free-form JSON in every
// message of the protocol (a google.protobuf.Struct or Value in 1.0),
// whose member names are the sender's own.
func freeForm(name []byte) bool {
	return string(name) == "metadata" || string(name) == "data"
}
