package mcp

// The direct path of a stateless tools/call. The SDK's stateless handler
// makes a session for each request and decodes the request a dozen times
// over (docs/sdk.md, "Performance"): 10× the CPU of the same call over
// JSON-RPC. The plain call, which is nearly every call, needs none of
// that: it is checked here as the SDK checks it, run by the same tool
// handler, and answered in JSON. Whatever is not plain (a batch, a
// progress token, headers or _meta the SDK would refuse or make more of)
// goes to the SDK, which answers it, or its error, as before.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// The headers of a 2026-07-28 request that name what its body calls.
const (
	methodHeader      = "Mcp-Method"
	nameHeader        = "Mcp-Name"
	paramHeaderPrefix = "Mcp-Param-"
)

// callDirect answers env, a stateless request, when it is a plain
// tools/call, and reports whether it did; false, and nothing written, for
// a request the SDK is to answer.
func (b *binding) callDirect(w http.ResponseWriter, in *inbound, env *envelope) bool {
	params, ok := b.plainToolsCall(in.r, env)
	if !ok {
		return false
	}
	b.answerCall(w, in, env.ID, in.r.Context(), &sdk.CallToolRequest{Params: params})
	return true
}

// answerCall runs req, a tools/call, in ctx and writes the answer to
// request id: its result, its error, or the handle of the task it runs as
// (asTask).
func (b *binding) answerCall(w http.ResponseWriter, in *inbound, id json.RawMessage, ctx context.Context, req *sdk.CallToolRequest) {
	res, err := b.runCall(ctx, in, req)
	if err := in.r.Context().Err(); err != nil {
		in.ended = err // nobody is left to answer
		return
	}
	var out []byte
	switch call := asTask(ctx); {
	case err != nil:
	case call != nil && call.handle != nil:
		out, err = b.appendTask(id, "task", call.handle)
	default:
		out, err = b.appendResult(id, res)
	}
	b.writeAnswer(w, in, id, out, err)
}

// writeAnswer writes out, the answer to request id, or the JSON-RPC error
// err when there is one.
func (b *binding) writeAnswer(w http.ResponseWriter, in *inbound, id json.RawMessage, out []byte, err error) {
	status := http.StatusOK
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			b.log.Error("MCP: an answer could not be encoded", zap.Error(err))
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result could not be encoded"}
		}
		in.fail(rpcErr.Code)
		status = statelessErrorStatus(rpcErr.Code)
		out = appendRPCError(id, rpcErr)
	}
	b.h.WriteJSON(w, status, "application/json", out)
}

// statelessErrorStatus is the HTTP status of a 2026-07-28 answer that is
// JSON-RPC error code: 404 for an unknown method, 400 for invalid params,
// an unsupported version, missing capabilities (SEP-2575, as the SDK
// answers them) or headers that do not match the body (SEP-2243), 200
// otherwise.
func statelessErrorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, sdk.CodeUnsupportedProtocolVersion, sdk.CodeMissingRequiredClientCapabilities, sdk.CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// plainToolsCall is env's tools/call parameters when the SDK's stateless
// handler would take env as it is (its checks of the method, content type,
// Accept, protocol version, standard headers and _meta), and the call
// needs nothing of a session: no progress token, no Mcp-Param headers.
func (b *binding) plainToolsCall(r *http.Request, env *envelope) (*sdk.CallToolParamsRaw, bool) {
	hdr := r.Header
	if r.Method != http.MethodPost || env.JSONRPC != "2.0" || env.Method != "tools/call" || !validRequestID(env.ID) ||
		hdr.Get("Mcp-Protocol-Version") != statelessVersion || hdr.Get(methodHeader) != env.Method ||
		!isJSONContent(hdr.Get("Content-Type")) || !acceptsJSONAndSSE(hdr.Values("Accept")) {
		return nil, false
	}
	for name := range hdr {
		if strings.HasPrefix(name, paramHeaderPrefix) {
			return nil, false
		}
	}
	p := &env.Params
	if p.Name == "" || hdr.Get(nameHeader) != p.Name || b.tools.skills[p.Name] == nil ||
		p.Meta.ProtocolVersion != statelessVersion || firstByte(p.Meta.ClientCapabilities) != '{' ||
		p.Meta.ProgressToken != nil || p.InputResponses != nil || p.RequestState != nil {
		return nil, false
	}
	// The capabilities stay JSON until a question for missing arguments
	// reads them (ClientCapabilities decodes them then).
	return &sdk.CallToolParamsRaw{Name: p.Name, Arguments: p.Arguments, Meta: sdk.Meta{
		sdk.MetaKeyProtocolVersion: p.Meta.ProtocolVersion, sdk.MetaKeyClientCapabilities: p.Meta.ClientCapabilities}}, true
}

// validRequestID reports whether id is a JSON-RPC request id: a string or
// a number (MCP allows no null id).
func validRequestID(id json.RawMessage) bool {
	switch c := firstByte(id); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

func isJSONContent(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// acceptsJSONAndSSE reports whether an Accept header takes both JSON and
// SSE answers, as the transport requires of a client.
func acceptsJSONAndSSE(values []string) bool {
	var json, sse bool
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(item, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				sse = true
			case "*/*":
				json, sse = true, true
			}
		}
	}
	return json && sse
}

// appendResult is the JSON-RPC answer to request id holding res as the
// SDK writes it at 2026-07-28: its resultType, and the server's identity
// in its _meta.
func (b *binding) appendResult(id json.RawMessage, res *sdk.CallToolResult) ([]byte, error) {
	out := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...)
	if res.InputRequests == nil {
		if out, ok := b.appendTextResult(out, res); ok {
			return append(out, '}'), nil
		}
	}
	if res.Meta == nil {
		res.Meta = sdk.Meta{}
	}
	res.Meta[sdk.MetaKeyServerInfo] = b.serverInfo
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	// The SDK keeps a result's type unexported: it goes first in the object.
	out = append(out, `{"resultType":`...)
	if res.InputRequests != nil {
		out = append(out, `"input_required"`...)
	} else {
		out = append(out, `"complete"`...)
	}
	if rest := bytes.TrimPrefix(body, []byte("{")); len(rest) > 1 {
		out = append(out, ',')
		out = append(out, rest...)
	} else {
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// appendTextResult writes a complete result whose contents are all text,
// as the SDK's encoding/json would but without its reflection (results
// of JSON and text skills, and errors: nearly all); ok is false, and dst
// as it was, for any other.
func (b *binding) appendTextResult(dst []byte, res *sdk.CallToolResult) (_ []byte, ok bool) {
	if res.Content == nil { // written as null
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"resultType":"complete","content":[`...)
	for i, c := range res.Content {
		text, isText := c.(*sdk.TextContent)
		if !isText || text.Meta != nil || text.Annotations != nil {
			return dst[:start], false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst, _ = jsonx.AppendValue(dst, text.Text)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if res.StructuredContent != nil {
		var err error
		if dst, err = jsonx.AppendValue(append(dst, `,"structuredContent":`...), res.StructuredContent); err != nil {
			return dst[:start], false
		}
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	dst = append(dst, `,"_meta":{`...)
	for key, value := range res.Meta {
		if key == sdk.MetaKeyServerInfo {
			continue
		}
		var err error
		dst, _ = jsonx.AppendValue(dst, key)
		if dst, err = jsonx.AppendValue(append(dst, ':'), value); err != nil {
			return dst[:start], false
		}
		dst = append(dst, ',')
	}
	return append(append(dst, b.serverInfoJSON...), "}}"...), true
}

// appendRPCError is the JSON-RPC error answer to request id.
func appendRPCError(id json.RawMessage, e *jsonrpc.Error) []byte {
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, e.Code, 10)
	out = append(out, `,"message":`...)
	msg, _ := json.Marshal(e.Message)
	out = append(out, msg...)
	if len(e.Data) > 0 {
		out = append(append(out, `,"data":`...), e.Data...)
	}
	return append(out, "}}"...)
}
