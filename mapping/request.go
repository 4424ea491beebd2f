package mapping

// Building the upstream request at run time: path, query, headers and
// body from the expression variables, the caller's forwarded headers, and
// the failure a request that cannot be built ends the run in.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
)

// credentialError is an upstream header that could not be applied. It never
// holds the header's value.
type credentialError struct {
	header string
	err    error
}

func (e *credentialError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("credential header %s is null", e.header)
	}
	return fmt.Sprintf("credential header %s: %v", e.header, e.err)
}

func (e *credentialError) Unwrap() error { return e.err }

// newRequest builds the upstream request from the expression variables.
func (r *request) newRequest(ctx context.Context, up *upstream, m *vm.VM, vars *exprVars) (*http.Request, error) {
	path, rawPath, err := r.path.build(m, vars)
	if err != nil {
		return nil, err
	}
	query := r.constQuery
	if !r.allConstQuery {
		if query, err = r.buildQuery(m, vars); err != nil {
			return nil, err
		}
	}
	var body []byte
	var contentType string
	if r.body != nil {
		if body, contentType, err = r.buildBody(m, vars); err != nil {
			return nil, err
		}
	}
	header, err := r.buildHeader(m, vars, body != nil)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		header = header.Clone()
		header.Set("Content-Type", contentType)
	}
	// A value, copied once by WithContext: one allocation, not two.
	req := http.Request{
		Method:     r.method,
		URL:        &url.URL{Scheme: up.scheme, Host: up.host, Path: path, RawPath: rawPath, RawQuery: query},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Host:       up.host,
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req.WithContext(up.resendable(ctx, r.mayResend())), nil
}

// build returns the path decoded and as sent. Every hole's value is escaped
// as one path segment, so no value can add a segment, a query or a
// fragment; a value that would make a "." or ".." segment is refused.
func (p *pathTemplate) build(m *vm.VM, vars *exprVars) (string, string, error) {
	if p.holes == 0 {
		return p.parts[0].decoded, p.parts[0].raw, nil
	}
	var raw, dec strings.Builder
	raw.Grow(p.size + 16*p.holes)
	dec.Grow(p.size + 16*p.holes)
	for i := range p.parts {
		part := &p.parts[i]
		if part.prog == nil {
			raw.WriteString(part.raw)
			dec.WriteString(part.decoded)
			continue
		}
		v, err := m.Run(part.prog, vars)
		if err != nil {
			return "", "", err
		}
		if v == nil {
			return "", "", &inputError{fmt.Sprintf("the path parameter {%s} is missing", part.src)}
		}
		if err := pathValue(&raw, &dec, part.src, v); err != nil {
			return "", "", err
		}
	}
	rs := raw.String()
	if dotSegment(rs) {
		return "", "", &inputError{`the path parameters may not make a "." or ".." path segment`}
	}
	return dec.String(), rs, nil
}

// pathValue writes a hole's value, escaped as one segment, to raw and as
// it is to dec. A list is OpenAPI's simple style of a path parameter
// (RFC 6570's {ids}): its items escaped each and joined by commas,
// which stay commas, so that ["a,b", "c"] is a%2Cb,c.
func pathValue(raw, dec *strings.Builder, src string, v any) error {
	if s, ok := scalarString(v); ok {
		if s == "" {
			return &inputError{fmt.Sprintf("the path parameter {%s} is empty", src)}
		}
		raw.WriteString(url.PathEscape(s))
		dec.WriteString(s)
		return nil
	}
	if !isList(v) {
		return &inputError{fmt.Sprintf("the path parameter {%s} is a %s, not a value or a list of values", src, kindName(v))}
	}
	items := 0
	err := forEach(v, func(x any) error {
		s, ok := scalarString(x)
		switch {
		case !ok:
			return &inputError{fmt.Sprintf("the path parameter {%s} holds a %s, not a value", src, kindName(x))}
		case s == "":
			return &inputError{fmt.Sprintf("the path parameter {%s} holds an empty value", src)}
		}
		if items++; items > 1 {
			raw.WriteByte(',')
			dec.WriteByte(',')
		}
		raw.WriteString(url.PathEscape(s))
		dec.WriteString(s)
		return nil
	})
	if err == nil && items == 0 {
		err = &inputError{fmt.Sprintf("the path parameter {%s} is empty", src)}
	}
	return err
}

// dotSegment reports whether an escaped path has a "." or ".." segment.
func dotSegment(path string) bool {
	for len(path) > 0 {
		i := strings.IndexByte(path, '/')
		seg := path
		if i >= 0 {
			seg, path = path[:i], path[i+1:]
		} else {
			path = ""
		}
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func (r *request) buildQuery(m *vm.VM, vars *exprVars) (string, error) {
	w := paramWriter{b: make([]byte, 0, r.querySize), what: "query parameter", taken: r.queryNames, limit: maxQueryBytes}
	for i := range r.query {
		q := &r.query[i]
		if q.tpl == nil {
			if q.pre != "" {
				w.next()
				w.b = append(w.b, q.pre...)
			}
			continue
		}
		v, err := q.tpl.value(m, vars)
		if err != nil {
			return "", err
		}
		if err := w.param(q.name, v, q.encoding); err != nil {
			return "", err
		}
	}
	return string(w.b), nil
}

func (r *request) buildHeader(m *vm.VM, vars *exprVars, hasBody bool) (http.Header, error) {
	base := r.header
	if hasBody {
		base = r.headerWithBody
	}
	if len(r.dynamic) == 0 {
		return base, nil
	}
	h := make(http.Header, len(base)+len(r.dynamic))
	for k, v := range base {
		h[k] = v // shared slices: nothing below appends to a constant header's values
	}
	for i := range r.dynamic {
		d := &r.dynamic[i]
		v, err := d.tpl.value(m, vars)
		if err == nil && v == nil && d.credential {
			return nil, &credentialError{header: d.name}
		}
		if err == nil {
			err = forEach(v, func(x any) error {
				if x == nil {
					return nil
				}
				s, ok := scalarString(x)
				if !ok {
					return &inputError{fmt.Sprintf("the header %s holds a %s, not a value or a list of values", d.name, kindName(x))}
				}
				if !validHeaderValue(s) {
					return &inputError{fmt.Sprintf("the header %s would hold a line break or a control character", d.name)}
				}
				h[d.name] = append(h[d.name], s)
				return nil
			})
		}
		if err != nil {
			if d.credential {
				return nil, &credentialError{header: d.name, err: err}
			}
			return nil, err
		}
	}
	return h, nil
}

// buildBody encodes the body's value; contentType is set when the format
// decides it per request (multipart, for its boundary).
func (r *request) buildBody(m *vm.VM, vars *exprVars) (body []byte, contentType string, err error) {
	v, err := m.Run(r.body, vars)
	if err != nil || v == nil {
		return nil, "", err
	}
	if pairs, ok := v.(map[any]any); ok { // fromPairs' map
		if v, err = stringKeyed(pairs); err != nil {
			return nil, "", err
		}
	}
	switch r.format {
	case formatForm:
		body, err = encodeForm(v, r.formFields)
		return body, "", err
	case formatMultipart:
		return encodeMultipart(v)
	}
	if body, err = json.Marshal(v); err != nil {
		return nil, "", fmt.Errorf("encoding the body as JSON: %w", err)
	}
	return body, "", nil
}

// encodeMultipart encodes a map as multipart/form-data, keys sorted: a
// file value (a map with bytes, and optionally name and media_type, as a
// file argument is) becomes a file part, a list repeats its key, nulls are
// left out and every other value is a field.
func encodeMultipart(v any) ([]byte, string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("a multipart body must be a map, not a %s", kindName(v))
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		err := forEach(obj[k], func(x any) error {
			switch x := x.(type) {
			case nil:
				return nil
			case map[string]any:
				return writeFilePart(w, k, x)
			}
			s, ok := scalarString(x)
			if !ok {
				return &inputError{fmt.Sprintf("the multipart field %s holds a %s, not a value, a file or a list of them", k, kindName(x))}
			}
			return w.WriteField(k, s)
		})
		if err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func writeFilePart(w *multipart.Writer, field string, f map[string]any) error {
	var data []byte
	switch b := f["bytes"].(type) {
	case []byte:
		data = b
	case string:
		data = []byte(b)
	default:
		if f["url"] != nil {
			return &inputError{fmt.Sprintf("the file %s is given by URL only: a multipart body needs its bytes", field)}
		}
		return &inputError{fmt.Sprintf("the multipart field %s holds a map that is not a file (a file has bytes)", field)}
	}
	name, _ := f["name"].(string)
	if name == "" {
		name = field
	}
	mediaType, _ := f["media_type"].(string)
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	if !validHeaderValue(name) || !validHeaderValue(mediaType) {
		return &inputError{fmt.Sprintf("the file %s has a name or media type with a line break or a control character", field)}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", multipart.FileContentDisposition(field, name))
	h.Set("Content-Type", mediaType)
	pw, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	_, err = pw.Write(data)
	return err
}

// stringKeyed is a map with any keys (as expr's fromPairs makes) as a
// map with string keys, the maps among its values too.
func stringKeyed(m map[any]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("the body's map has a key that is not a string: %v", k)
		}
		if inner, isMap := v.(map[any]any); isMap {
			var err error
			if v, err = stringKeyed(inner); err != nil {
				return nil, err
			}
		}
		out[key] = v
	}
	return out, nil
}

// encodeForm encodes a map as application/x-www-form-urlencoded, keys
// sorted, each field as fields says or as formEncoding does by default;
// null values are left out.
func encodeForm(v any, fields map[string]paramEncoding) ([]byte, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a form body must be a map, not a %s", kindName(v))
	}
	keys := slices.Sorted(maps.Keys(obj))
	w := paramWriter{b: []byte{}, what: "form field", taken: keys, limit: maxFormBytes}
	for _, k := range keys {
		if err := w.param(url.QueryEscape(k), obj[k], formEncoding(fields[k], obj[k])); err != nil {
			return nil, err
		}
	}
	return w.b, nil
}

// forward copies the caller's headers that the skill forwards onto req.
// The request's header map may be shared with other requests, so it is
// copied before the first change.
func forward(req *http.Request, names []string, from http.Header) {
	copied := false
	for _, name := range names {
		vals := from[name]
		if len(vals) == 0 {
			continue
		}
		if !copied {
			req.Header, copied = req.Header.Clone(), true
			if req.Header == nil {
				req.Header = http.Header{}
			}
		}
		req.Header[name] = slices.Clone(vals)
	}
}

func requestFailure(err error) failure {
	var in *inputError
	var cred *credentialError
	switch {
	case errors.As(err, &cred): // first: a credential's own error may be an input error
		return failure{state: a2a.TaskStateFailed, stage: "request",
			public: "could not apply its credentials for the service, so the request was not sent.", err: err, agentFault: true}
	case errors.As(err, &in):
		return failure{state: a2a.TaskStateRejected, stage: "request", public: "cannot use this input: " + in.msg + ".", err: err}
	}
	return failure{state: a2a.TaskStateFailed, stage: "request", public: "could not build its request" + exprDetail(err) + ".", err: err, agentFault: true}
}
