package pbconv

// The request of SendMessage, on every gRPC send's path, is converted field
// by field when it is plainly valid: when the JSON route (DecodeRequest)
// would take it unchanged. Whatever that cannot tell at a glance (a part
// without content, a push config to check, a number JSON cannot carry
// exactly, deep nesting, any required field missing) takes the JSON route,
// which alone says what is wrong: there is still one set of rules.
// FuzzSendMessageRequest holds the two routes to the same model.

import (
	"math"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
)

// plainDepth is how deeply a struct value of a plain request may nest: the
// JSON route counts the JSON-RPC envelope and the members around a part's
// data too (at most 8 levels), against a2a.MaxJSONDepth.
const plainDepth = a2a.MaxJSONDepth - 8

// plainSendMessage converts in when it is plainly valid; false: take the
// JSON route.
func plainSendMessage(in *a2apb.SendMessageRequest) (*a2a.SendMessageRequest, bool) {
	m := in.GetMessage()
	if m == nil || m.MessageId == "" || (m.Role != a2apb.Role_ROLE_USER && m.Role != a2apb.Role_ROLE_AGENT) ||
		len(m.Parts) == 0 || len(m.Parts) > a2a.MaxParts {
		return nil, false
	}
	out := &a2a.SendMessageRequest{Tenant: in.Tenant, Message: a2a.Message{MessageID: m.MessageId, ContextID: m.ContextId,
		TaskID: m.TaskId, Role: a2a.Role(m.Role), Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIds}}
	var ok bool
	if out.Metadata, ok = plainStruct(in.Metadata, 0); !ok {
		return nil, false
	}
	if out.Message.Metadata, ok = plainStruct(m.Metadata, 0); !ok {
		return nil, false
	}
	out.Message.Parts = make([]a2a.Part, len(m.Parts))
	for i, p := range m.Parts {
		if out.Message.Parts[i], ok = plainPart(p); !ok {
			return nil, false
		}
	}
	if c := in.Configuration; c != nil {
		if c.TaskPushNotificationConfig != nil || c.GetHistoryLength() < 0 {
			return nil, false
		}
		out.Configuration = &a2a.SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes,
			HistoryLength: c.HistoryLength, ReturnImmediately: c.ReturnImmediately}
	}
	return out, true
}

func plainPart(p *a2apb.Part) (a2a.Part, bool) {
	out := a2a.Part{Filename: p.GetFilename(), MediaType: p.GetMediaType()}
	switch c := p.GetContent().(type) {
	case *a2apb.Part_Text:
		out.Kind, out.Text = a2a.PartText, c.Text
	case *a2apb.Part_Raw:
		out.Kind, out.Raw = a2a.PartRaw, c.Raw
		if out.Raw == nil {
			out.Raw = []byte{} // as "raw": "" decodes
		}
	case *a2apb.Part_Url:
		out.Kind, out.URL = a2a.PartURL, c.Url
	case *a2apb.Part_Data:
		v, ok := plainValue(c.Data, 0)
		if !ok {
			return a2a.Part{}, false
		}
		out.Kind, out.Data = a2a.PartData, v
	default:
		return a2a.Part{}, false
	}
	var ok bool
	out.Metadata, ok = plainStruct(p.GetMetadata(), 0)
	return out, ok
}

// plainStruct is s as the JSON codec decodes it (nil: absent).
func plainStruct(s *structpb.Struct, depth int) (map[string]any, bool) {
	if s == nil {
		return nil, true
	}
	if depth == plainDepth {
		return nil, false
	}
	m := make(map[string]any, len(s.Fields))
	for k, v := range s.Fields {
		x, ok := plainValue(v, depth+1)
		if !ok {
			return nil, false
		}
		m[k] = x
	}
	return m, true
}

// plainValue is v as the JSON codec decodes it, when JSON carries it as
// it is: a number that is finite and, being an integer beyond 2^53 when
// it is that large, is not refused by the JSON route; a value of one kind.
func plainValue(v *structpb.Value, depth int) (any, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return nil, true
	case *structpb.Value_NumberValue:
		n := k.NumberValue
		return n, !math.IsNaN(n) && math.Abs(n) <= 1<<53
	case *structpb.Value_StringValue:
		return k.StringValue, true
	case *structpb.Value_BoolValue:
		return k.BoolValue, true
	case *structpb.Value_StructValue:
		if k.StructValue == nil {
			return nil, false
		}
		return plainStruct(k.StructValue, depth)
	case *structpb.Value_ListValue:
		if k.ListValue == nil || depth == plainDepth {
			return nil, false
		}
		l := make([]any, len(k.ListValue.Values))
		for i, e := range k.ListValue.Values {
			x, ok := plainValue(e, depth+1)
			if !ok {
				return nil, false
			}
			l[i] = x
		}
		return l, true
	}
	return nil, false
}
