package upstreamauth

// The transport that puts the token on every upstream request.

import (
	"context"
	"io"
	"net/http"
)

// Transport sends each request with a token of Client as its Bearer
// Authorization. A 401 tells Client the token was refused, and a request
// marked WithResend is sent once more, body replayed, with the token that
// replaces it; a 401 to a request not so marked, or to a token Client
// keeps (see refused), is the answer. A token it cannot get is its error: the
// request is not sent.
type Transport struct {
	Base   http.RoundTripper
	Client *Client
}

type subjectKey struct{}

type resendKey struct{}

// WithResend is ctx saying that its request does no harm sent twice (the
// rule a retry follows): a 401 may be answered by sending it again with
// another token.
func WithResend(ctx context.Context) context.Context {
	return context.WithValue(ctx, resendKey{}, true)
}

// WithSubject is ctx carrying the caller's validated bearer token, which a
// token exchange trades for the upstream's.
func WithSubject(ctx context.Context, subject Subject) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

func subjectOf(ctx context.Context) Subject {
	s, _ := ctx.Value(subjectKey{}).(Subject)
	return s
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	subject := subjectOf(ctx)
	tok, err := t.Client.Token(ctx, subject)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.Base.RoundTrip(withToken(req, tok, req.Body))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	// The token may have been revoked or have expired early: Client
	// replaces it, unless the 401 is the upstream's answer, and a request
	// that may be sent twice goes once more with the new one. Whatever
	// that brings is the answer.
	renewal, renewed := t.Client.refused(subject, tok)
	if !renewed || ctx.Value(resendKey{}) == nil || req.Body != nil && req.GetBody == nil {
		return resp, nil
	}
	var body io.ReadCloser
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keeps the connection
	resp.Body.Close()
	var fresh string
	if renewal != nil {
		fresh, err = t.Client.wait(ctx, renewal)
	} else {
		fresh, err = t.Client.Token(ctx, subject)
	}
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	return t.Base.RoundTrip(withToken(req, fresh, body))
}

// withToken is req with the token and body: a copy, since a RoundTripper
// must not change its request.
func withToken(req *http.Request, tok string, body io.ReadCloser) *http.Request {
	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Body = body
	return r
}

// CloseIdleConnections closes the idle connections of Base and of the
// token client.
func (t *Transport) CloseIdleConnections() {
	closeIdle(t.Base)
	closeIdle(t.Client.transport)
}

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
