package mcp

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// inbound is what the binding knows of the HTTP request that carries a
// call, from its checks to its answer: the request and its caller, which
// the call's tool handler runs for, and how the call ended, which the
// observer is told once (report).
type inbound struct {
	r      *http.Request
	caller *authn.Identity
	// rpcError is the code of the first JSON-RPC error a method of the
	// request answered (fail): the call's code, which an error inside a
	// 200 answer does not show, and more exact than the HTTP status.
	rpcError atomic.Int64
	// status is the code an HTTP error the SDK answered stands for
	// (answered), when the binding answered no error of its own.
	status atomic.Int64
	// ended is the error of the request's context when it ended before
	// the call was answered: nobody was left to answer.
	ended error
}

// fail notes a JSON-RPC error a method of the request answered; the first
// one is the call's.
func (in *inbound) fail(code int64) { in.rpcError.CompareAndSwap(0, code) }

// answered notes the HTTP status of the answer as its header goes out.
func (in *inbound) answered(status int) {
	switch {
	case status >= 500:
		in.status.CompareAndSwap(0, a2a.CodeInternalError)
	case status >= 400:
		in.status.CompareAndSwap(0, a2a.CodeInvalidRequest)
	}
}

// report records on c how the call ended, for the observer: the one
// place the binding says so. An error the engine answered for the binding
// (WriteError, a refusal) is on c already.
func (in *inbound) report(c *server.Exchange) {
	switch code := in.rpcError.Load(); {
	case in.ended != nil:
		c.EndedBy(in.ended)
	case code != 0:
		c.Code = int(code)
	case c.Code == 0:
		c.Code = int(in.status.Load())
	}
}

// carrying has next, one of the SDK's handlers, hand each request's
// inbound (carry) to the handlers of the methods it carries: the SDK gives
// them a request's headers and token info (RequestExtra), not its context,
// and a session's handlers run under the session's context, which the
// request that opened it made. Token info is the one value the SDK takes
// from each request's context (auth.RequireBearerToken puts it there): its
// Extra holds the inbound, which never travels on the wire, so a client
// cannot forge it. Its UserID is left empty: the binding checks a
// session's owner itself (sessionOf), where the SDK would pin it to one.
func carrying(next http.Handler) http.Handler {
	return auth.RequireBearerToken(inboundToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

// inboundKey is the context key of a request's inbound, from carry to
// inboundToken.
type inboundKey struct{}

// carriedBearer is the Authorization that carry gives the SDK's view of a
// request, for auth.RequireBearerToken to take it: the caller was
// authenticated before, and its credential is of no use to the SDK.
var carriedBearer = []string{"Bearer inbound"}

// carry is r, in's request, made to hand in to the SDK's handlers through
// a handler that carrying wraps.
func carry(r *http.Request, in *inbound) *http.Request {
	header := maps.Clone(r.Header)
	header["Authorization"] = carriedBearer
	r = r.WithContext(context.WithValue(r.Context(), inboundKey{}, in))
	r.Header = header
	return r
}

// inboundToken is the token info of r: its inbound, which carry put in its
// context; the token it is given stands for nothing.
func inboundToken(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	in, _ := r.Context().Value(inboundKey{}).(*inbound)
	if in == nil {
		return nil, fmt.Errorf("mcp: %w: the request was not carried", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Extra: map[string]any{inboundExtra: in}}, nil
}

// inboundExtra is the key of the inbound in the token info's Extra.
const inboundExtra = "caddy-a2a/inbound"

// inboundOf is the request that carries a method the SDK serves, from the
// token info the SDK gives the method's handler; nil for none.
func inboundOf(extra *sdk.RequestExtra) *inbound {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	in, _ := extra.TokenInfo.Extra[inboundExtra].(*inbound)
	return in
}
