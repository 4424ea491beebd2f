package a2a

// The client's side of the JSON-RPC codec: encoding a request, decoding an
// answer (its error, or a Message result), and reading a SendMessage as a
// person writes one by hand. The
// server needs none of it; tools that play the client do (the dry run
// serves a sample message through the server and reads what it answers).

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// VersionParameter is the service parameter that names the version a
// request speaks (spec 1.0 §3.6): an HTTP header, or a query parameter.
const VersionParameter = "A2A-Version"

// AppendRequest appends the JSON-RPC request req, in version v, to dst: a
// client's SendMessage or SendStreamingMessage, whose Params is a
// *SendMessageRequest. DecodeRequest reads it back as it was. On error dst
// is returned unchanged.
func AppendRequest(dst []byte, v Version, req *Request) ([]byte, error) {
	p, ok := req.Params.(*SendMessageRequest)
	if !ok || (req.Method != MethodSendMessage && req.Method != MethodSendStreamingMessage) {
		return dst, fmt.Errorf("a2a: encode %s request: only SendMessage and SendStreamingMessage are supported", v)
	}
	start := len(dst)
	dst, err := appendSendMessage(dst, v, req, p)
	if err != nil {
		return dst[:start], fmt.Errorf("a2a: encode %s request: %w", v, err)
	}
	return dst, nil
}

func appendSendMessage(dst []byte, v Version, req *Request, p *SendMessageRequest) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	var err error
	if len(req.ID) > 0 {
		if dst, err = jsonx.AppendRaw(jsonx.AppendKey(dst, "id"), req.ID); err != nil {
			return dst, fmt.Errorf("id: %w", err)
		}
	}
	dst = appendStringField(dst, "method", req.Method.Name(v))
	dst = append(dst, `,"params":{"message":`...)
	if dst, err = appendMessage(dst, form(v), &p.Message); err != nil {
		return dst, err
	}
	if c := p.Configuration; c != nil {
		dst = appendSendConfiguration(jsonx.AppendKey(dst, "configuration"), v, c)
	}
	if dst, err = appendMetadata(dst, p.Metadata); err != nil {
		return dst, err
	}
	if p.Tenant != "" && v == V10 {
		dst = appendStringField(dst, "tenant", p.Tenant)
	}
	return append(dst, "}}"...), nil
}

// appendSendConfiguration writes a SendMessageConfiguration; 0.3 says
// "blocking" where 1.0 says "returnImmediately".
func appendSendConfiguration(dst []byte, v Version, c *SendMessageConfiguration) []byte {
	dst = jsonx.AppendStrings(append(dst, `{"acceptedOutputModes":`...), c.AcceptedOutputModes)
	if c.HistoryLength != nil {
		dst = strconv.AppendInt(jsonx.AppendKey(dst, "historyLength"), int64(*c.HistoryLength), 10)
	}
	if v == V10 {
		if c.ReturnImmediately {
			dst = append(jsonx.AppendKey(dst, "returnImmediately"), "true"...)
		}
		if c.PushNotification != nil {
			dst = appendPushConfig(jsonx.AppendKey(dst, "taskPushNotificationConfig"), v, c.PushNotification)
		}
	} else {
		dst = strconv.AppendBool(jsonx.AppendKey(dst, "blocking"), !c.ReturnImmediately)
		if c.PushNotification != nil {
			dst = appendPushConfig(jsonx.AppendKey(dst, "pushNotificationConfig"), v, c.PushNotification)
		}
	}
	return append(dst, '}')
}

// appendPushConfig writes a push notification config as a request carries
// it; 0.3 lists the authentication's schemes where 1.0 names one.
func appendPushConfig(dst []byte, v Version, c *TaskPushNotificationConfig) []byte {
	dst = jsonx.AppendString(append(dst, `{"url":`...), c.URL)
	if c.ID != "" {
		dst = appendStringField(dst, "id", c.ID)
	}
	if c.Token != "" {
		dst = appendStringField(dst, "token", c.Token)
	}
	if v == V10 {
		if c.TaskID != "" {
			dst = appendStringField(dst, "taskId", c.TaskID)
		}
		if c.Tenant != "" {
			dst = appendStringField(dst, "tenant", c.Tenant)
		}
	}
	if a := c.Authentication; a != nil {
		dst = jsonx.AppendKey(dst, "authentication")
		if v == V10 {
			dst = jsonx.AppendString(append(dst, `{"scheme":`...), a.Scheme)
		} else {
			dst = jsonx.AppendStrings(append(dst, `{"schemes":`...), []string{a.Scheme})
		}
		if a.Credentials != "" {
			dst = appendStringField(dst, "credentials", a.Credentials)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// Response is a JSON-RPC answer to SendMessage, as a client reads it.
type Response struct {
	ID json.RawMessage
	// Error is the answer's error; nil for a result.
	Error *Error
	// Result is the result as written: a Task or a Message.
	Result json.RawMessage
	// Message is the result decoded when it is a Message (a skill that
	// answers without a task); nil for a Task, which a tool reads from the
	// task store the server keeps it in.
	Message *Message
}

// DecodeResponse decodes the answer to a SendMessage written in version v.
// Of a 1.0 error's details it reads the ErrorInfo's reason and metadata
// and the BadRequest's field; a 0.3 error carries its detail in its
// message.
func DecodeResponse(v Version, body []byte) (*Response, error) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("a2a: decode %s response: %w", v, err)
	}
	resp := &Response{ID: env.ID, Result: env.Result}
	switch {
	case env.Error != nil:
		resp.Error = &Error{Code: env.Error.Code, Message: env.Error.Message}
		readErrorDetails(env.Error.Data, resp.Error)
	case len(env.Result) > 0:
		var err error
		if v == V10 {
			resp.Message, err = decodeMessageResult[part10](v, env.Result)
		} else {
			resp.Message, err = decodeMessageResult[part03](v, env.Result)
		}
		if err != nil {
			return nil, fmt.Errorf("a2a: decode %s response: %w", v, err)
		}
	default:
		return nil, fmt.Errorf("a2a: decode %s response: it has neither a result nor an error", v)
	}
	return resp, nil
}

// decodeMessageResult decodes a SendMessage result that is a Message, and
// returns nil for a Task: 1.0 wraps the result as {"message": …} or
// {"task": …}, 0.3 tells the two apart by their "kind".
func decodeMessageResult[P wirePart](v Version, raw json.RawMessage) (*Message, error) {
	var w struct {
		Message *wireMessage[P] `json:"message"`
		Kind    string          `json:"kind"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if v == V03 {
		w.Message = nil
		if w.Kind == "message" {
			w.Message = new(wireMessage[P])
			if err := json.Unmarshal(raw, w.Message); err != nil {
				return nil, fmt.Errorf("result: %w", err)
			}
		}
	}
	if w.Message == nil {
		return nil, nil
	}
	m := new(Message)
	if err := decodeMessage(decoder{v: v}, w.Message, m); err != nil {
		return nil, within(err, "result")
	}
	return m, nil
}

// readErrorDetails fills e from the typed details of a 1.0 error's data;
// data of any other shape is left unread.
func readErrorDetails(data json.RawMessage, e *Error) {
	var details []struct {
		Type            string            `json:"@type"`
		Reason          string            `json:"reason"`
		Metadata        map[string]string `json:"metadata"`
		FieldViolations []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"fieldViolations"`
	}
	if len(data) == 0 || json.Unmarshal(data, &details) != nil {
		return
	}
	for _, d := range details {
		switch d.Type {
		case errorInfoType:
			e.Reason, e.Metadata = d.Reason, d.Metadata
		case badRequestType:
			if len(d.FieldViolations) > 0 {
				e.Field, e.Description = d.FieldViolations[0].Field, d.FieldViolations[0].Description
			}
		}
	}
}

// SniffVersion tells which version a SendMessage written by hand (see
// DecodeSendMessage) is in: a request by its method's name, its params or
// a message by the message's role ("ROLE_USER" is 1.0, "user" 0.3) or by
// the "kind" members 0.3 objects carry. A document that tells neither is
// 1.0. The error is a document that is not a JSON object, or a request
// whose method is no A2A method.
func SniffVersion(doc []byte) (Version, error) {
	shape, top, err := readSendMessageShape(doc)
	if err != nil {
		return V10, err
	}
	msg := doc
	switch shape {
	case shapeRequest:
		var name string
		_ = json.Unmarshal(top["method"], &name)
		switch {
		case LookupMethod(V10, name) != MethodUnknown:
			return V10, nil
		case LookupMethod(V03, name) != MethodUnknown:
			return V03, nil
		}
		return V10, fmt.Errorf("a2a: the request's method %q is not an A2A method", name)
	case shapeParams:
		msg = top["message"]
	}
	return messageVersion(msg), nil
}

// messageVersion tells a message's version by its role, or by the "kind"
// of the message or its parts (0.3 only); 1.0 otherwise.
func messageVersion(msg []byte) Version {
	var m struct {
		Role  string                       `json:"role"`
		Kind  string                       `json:"kind"`
		Parts []map[string]json.RawMessage `json:"parts"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return V10
	}
	switch {
	case strings.HasPrefix(m.Role, "ROLE_"):
		return V10
	case m.Role == "user" || m.Role == "agent" || m.Kind == "message":
		return V03
	}
	for _, part := range m.Parts {
		if _, ok := part["kind"]; ok {
			return V03
		}
	}
	return V10
}

// DecodeSendMessage decodes a SendMessage written by hand, in version v and
// in any of three shapes: a whole JSON-RPC request (SendMessage or
// SendStreamingMessage), its params ({"message": …, "configuration": …}),
// or the message alone. It is checked as DecodeRequest checks a request,
// and errors name fields as in one ("params.message.parts"). The Request's
// ID is nil unless doc is a whole request.
func DecodeSendMessage(v Version, doc []byte) (*Request, error) {
	shape, _, err := readSendMessageShape(doc)
	if err != nil {
		return nil, err
	}
	body := doc
	if shape != shapeRequest {
		params := json.RawMessage(doc)
		if shape == shapeMessage {
			if params, err = json.Marshal(map[string]json.RawMessage{"message": params}); err != nil {
				return nil, fmt.Errorf("a2a: %w", err)
			}
		}
		envelope := struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}{"2.0", MethodSendMessage.Name(v), params}
		if body, err = json.Marshal(envelope); err != nil {
			return nil, fmt.Errorf("a2a: %w", err)
		}
	}
	req, protoErr := DecodeRequest(v, body)
	if protoErr != nil {
		return nil, protoErr
	}
	if _, ok := req.Params.(*SendMessageRequest); !ok {
		return nil, fmt.Errorf("a2a: the request is %s, not %s or %s", req.Method.Name(v),
			MethodSendMessage.Name(v), MethodSendStreamingMessage.Name(v))
	}
	return req, nil
}

// sendMessageShape is how a hand-written SendMessage is given.
type sendMessageShape uint8

const (
	shapeMessage sendMessageShape = iota
	shapeParams
	shapeRequest
)

// readSendMessageShape tells a whole request (it has a method) from params
// (a message member, and no parts of their own) and from a message.
func readSendMessageShape(doc []byte) (sendMessageShape, map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return 0, nil, fmt.Errorf("a2a: not a JSON object: %w", err)
	}
	_, hasMethod := top["method"]
	_, hasMessage := top["message"]
	_, hasParts := top["parts"]
	switch {
	case hasMethod:
		return shapeRequest, top, nil
	case hasMessage && !hasParts:
		return shapeParams, top, nil
	}
	return shapeMessage, top, nil
}
