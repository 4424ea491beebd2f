package dryrun

// The dry run's upstream: a transport that records every request the
// skills make and answers it with the next sample response, or passes it
// on to the live upstream and records what comes back.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// recorder is the transport the skills are loaded with. Runs are
// sequential, so it needs no lock.
type recorder struct {
	responses []SampleResponse
	next      int
	live      http.RoundTripper
	// stop cancels the run when the samples run out; stopped says it did.
	stop      func()
	stopped   bool
	exchanges []*Exchange
}

// errNoSample stops a run whose sample responses ran out.
var errNoSample = fmt.Errorf("dry run: no sample response left: %w", context.Canceled)

func (t *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	x := &Exchange{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone()}
	if x.Header == nil {
		x.Header = http.Header{}
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		x.Body, err = io.ReadAll(body)
		body.Close()
		if err != nil {
			return nil, err
		}
	}
	t.exchanges = append(t.exchanges, x)
	if t.live != nil {
		resp, err := t.live.RoundTrip(req)
		if err != nil {
			x.Err = err
			return nil, err
		}
		x.Response = &RecordedResponse{Status: resp.StatusCode, Header: resp.Header.Clone()}
		resp.Body = &recordingBody{ReadCloser: resp.Body, rec: x.Response}
		return resp, nil
	}
	if t.next >= len(t.responses) {
		t.stopped = true
		t.stop()
		return nil, errNoSample
	}
	s := &t.responses[t.next]
	t.next++
	header := s.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	x.Response = &RecordedResponse{Status: s.Status, Header: header.Clone(), Body: s.Body, Source: s.Source}
	return &http.Response{
		Status:     strconv.Itoa(s.Status) + " " + http.StatusText(s.Status),
		StatusCode: s.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: io.NopCloser(bytes.NewReader(s.Body)), ContentLength: int64(len(s.Body)),
		Request: req,
	}, nil
}

// recordingBody keeps what the run reads of a live answer.
type recordingBody struct {
	io.ReadCloser
	rec *RecordedResponse
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rec.Body = append(b.rec.Body, p[:n]...)
	return n, err
}

// standInTokens answers upstream.oauth2's token endpoint in a run on
// sample responses, which asks no service: the upstream requests carry a
// stand-in token, masked in the report as every credential is. A live run
// asks the token endpoint itself.
type standInTokens struct{}

func (standInTokens) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(strings.NewReader(`{"access_token":"dry-run-token","token_type":"Bearer","expires_in":3600}`)),
		Request: req}, nil
}
