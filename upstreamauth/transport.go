package upstreamauth

// The transport that puts the token on every upstream request.

import (
	"context"
	"io"
	"net/http"
)

// Transport sends each request with a token of Client as its Bearer
// Authorization, and a request the upstream answers 401 once more, body
// replayed, with a token fetched anew. A token it cannot get is its
// error: the request is not sent.
type Transport struct {
	Base   http.RoundTripper
	Client *Client
}

type subjectKey struct{}

// WithSubject is ctx carrying the caller's validated bearer token, which a
// token exchange trades for the upstream's.
func WithSubject(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, subjectKey{}, token)
}

func subjectOf(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(string)
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
	if err != nil || resp.StatusCode != http.StatusUnauthorized || req.Body != nil && req.GetBody == nil {
		return resp, err
	}
	// The token may have been revoked or have expired early: once more
	// with another, and whatever that brings is the answer.
	var body io.ReadCloser
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keeps the connection
	resp.Body.Close()
	t.Client.Invalidate(subject, tok)
	fresh, err := t.Client.Token(ctx, subject)
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
