package mcp

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

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

// callHeader carries, from the binding to the SDK's handlers, the key
// under which the binding keeps a request (requests): the SDK gives its
// handlers a request's headers (RequestExtra.Header), not its context,
// and a session's handlers run under the session's context, which the
// request that opened it made. The binding sets it on every request, so
// a client cannot.
const callHeader = "Caddy-A2a-Mcp-Call"

// requests are the requests under way that the SDK serves, by their
// callHeader value.
type requests struct {
	byKey sync.Map
	last  atomic.Uint64
}

// carry makes in's request findable by the SDK's handlers (of), until
// the function it returns is called.
func (q *requests) carry(in *inbound) (done func()) {
	key := strconv.FormatUint(q.last.Add(1), 36)
	in.r.Header.Set(callHeader, key)
	q.byKey.Store(key, in)
	return func() { q.byKey.Delete(key) }
}

// of is the request that carries a method the SDK serves, from the
// headers it gives the method's handler; nil when the binding does not
// serve it (any more).
func (q *requests) of(extra *sdk.RequestExtra) *inbound {
	if extra == nil {
		return nil
	}
	in, _ := q.byKey.Load(extra.Header.Get(callHeader))
	req, _ := in.(*inbound)
	return req
}
