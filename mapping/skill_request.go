package mapping

// A skill's request section as loading compiles it (load_request.go,
// load_poll.go) and running reads it (request.go, send.go, poll.go).

import (
	"net/http"
	"time"

	"github.com/expr-lang/expr/vm"
)

// request is a skill's compiled request section.
type request struct {
	method string
	path   pathTemplate
	query  []queryParam
	// queryNames are the query parameters' names, which no exploded
	// object may add again.
	queryNames []string
	querySize  int // what most queries fit in, to size the buffer once
	// constQuery is the whole query when every parameter is constant.
	constQuery    string
	allConstQuery bool
	// header and headerWithBody hold the constant headers (the second one
	// with the body's Content-Type). Every request shares them, so they are
	// never modified after load.
	header, headerWithBody http.Header
	dynamic                []headerParam
	body                   *vm.Program
	format                 bodyFormat
	// formFields are how the form fields named like a declared argument
	// that says how it is sent are encoded.
	formFields map[string]paramEncoding
	retry      *retryPolicy // nil: one attempt
	// idempotencyKey is the Idempotency-Key the request sends; nil: none
	// (but upstream.headers or headers may set one as any header).
	idempotencyKey *idempotencyKey
	// repeatable: idempotent: true, the skill says that sending the
	// request twice does no harm.
	repeatable bool
	poll       *pollRule // nil: the answer is not a job to follow
	// credentials names the credential headers, constant or not, for
	// tools that must not show their values (the dry run).
	credentials []string
}

// bodyFormat is how a body's value is encoded.
type bodyFormat uint8

const (
	formatJSON bodyFormat = iota
	formatForm
	formatMultipart
)

// retryPolicy says when and how often an idempotent request is sent again.
type retryPolicy struct {
	attempts            int // in all, the first one included
	backoff, maxBackoff time.Duration
	statuses            []int
}

type pathTemplate struct {
	parts []pathPart
	holes int
	size  int // bytes of literal text, to size the builders
}

// pathPart is a literal, as written and decoded, or a hole.
type pathPart struct {
	raw, decoded string
	prog         *vm.Program
	src          string
}

type queryParam struct {
	name string // query-escaped
	// pre is the encoded "name=value" of a constant parameter ("" when a
	// constant null drops it); tpl is nil then.
	pre      string
	tpl      *template
	encoding paramEncoding // resolved
}

type headerParam struct {
	name string // canonical
	tpl  *template
	// credential marks an upstream header: a request whose credential
	// cannot be applied is not sent.
	credential bool
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

const idempotencyHeader = "Idempotency-Key"

// idempotencyKey is a request's idempotency_key: the key it sends.
type idempotencyKey struct {
	value *template // nil: the default key
}

// pollRule is a request's poll section, compiled.
type pollRule struct {
	starts *vm.Program // nil: the answer is 202 Accepted
	url    *template   // nil: the answer's Location header
	// interval is the first wait, multiplied by backoff after each poll up
	// to maxInterval; a Retry-After asking for longer wins.
	interval, maxInterval time.Duration
	backoff               float64
	maxWait               time.Duration
	done                  *vm.Program // nil: the answer is not 202
	failed                *vm.Program // nil: only done ends the job
	message               *template   // the progress message, or nil
	result                *template   // the result's URL, fetched once done; or nil
	cancel                *cancelCall // nil: nothing is sent when polling stops early
	// retry is how each poll and the result's GET are sent again: the
	// section's own, else the request's, else defaultPollRetry. An answer
	// with one of its statuses is the service's trouble, never the job's.
	retry *retryPolicy
	// origins are the origins (as origin() writes them) besides the
	// upstream's that job, result and cancel URLs may be on.
	origins []string
}

// cancelCall is the request that cancels a job.
type cancelCall struct {
	method  string
	url     *template // nil: the job's URL
	timeout time.Duration
}
