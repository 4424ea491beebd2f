package dryrun

// The dry run's input files: a sample A2A message, and sample upstream
// responses.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"gopkg.in/yaml.v3"
)

// SampleMessage is a message for a dry run, decoded as the server would
// decode it.
type SampleMessage struct {
	// Version is the protocol version it is written in, and the one the
	// dry run answers in.
	Version a2a.Version
	Message *a2a.Message
	// Configuration is the request's, when the sample has one.
	Configuration *a2a.SendMessageConfiguration
	// RequestID is the JSON-RPC id, when the sample was a whole request.
	RequestID json.RawMessage
	// Streaming says the sample was a SendStreamingMessage request.
	Streaming bool
}

// ParseSampleMessage reads a sample message: a Message object, the params
// of SendMessage ({"message": …, "configuration": …}) or a whole JSON-RPC
// SendMessage (or SendStreamingMessage) request. version is "0.3", "1.0",
// or "" to tell from the sample: the method's name, else the message's
// role ("ROLE_USER" is 1.0, "user" 0.3), else 1.0. The message is checked
// as the server checks a request (messageId, role and parts are required).
func ParseSampleMessage(src []byte, version string) (*SampleMessage, error) {
	var v a2a.Version
	var err error
	if version != "" {
		var verr *a2a.Error
		if v, verr = a2a.ParseVersion(version); verr != nil {
			return nil, fmt.Errorf("dryrun: version %q: want 0.3 or 1.0", version)
		}
	} else if v, err = a2a.SniffVersion(src); err != nil {
		return nil, fmt.Errorf("dryrun: the sample message: %w", err)
	}
	req, err := a2a.DecodeSendMessage(v, src)
	if err != nil {
		hint := ""
		if version == "" {
			hint = fmt.Sprintf(" (read as A2A %s; say which version it is if that is wrong)", v)
		}
		return nil, fmt.Errorf("dryrun: the sample message: %w%s", err, hint)
	}
	p := req.Params.(*a2a.SendMessageRequest)
	return &SampleMessage{Version: v, Message: &p.Message, Configuration: p.Configuration, RequestID: req.ID,
		Streaming: req.Method == a2a.MethodSendStreamingMessage}, nil
}

// SampleResponse is an upstream answer a dry run replays.
type SampleResponse struct {
	Status int
	Header http.Header
	Body   []byte
	// Source says where it was read, for the report: "file" or "file[i]".
	Source string
}

var sampleResponseKeys = []string{"status", "headers", "body", "text", "base64", "file"}

// ParseSampleResponses reads a sample response file; filename names it in
// errors and resolves a "file" key. Two forms:
//
// A raw HTTP response, as `curl -i` prints it: a status line
// ("HTTP/1.1 200 OK"), headers, an empty line and the body, taken as it is
// (Content-Length and Transfer-Encoding are ignored).
//
// YAML (or JSON): one response, or a list of them for several calls:
//
//	status: 200                 # default 200
//	headers:                    # name: value, or name: [values]
//	  Content-Type: application/json
//	body: {"city": "Paris"}     # a value sent as JSON (Content-Type defaults to application/json), or
//	text: "plain text"          # text (text/plain; charset=utf-8), or
//	base64: iVBORw0KGgo=        # bytes (application/octet-stream), or
//	file: avatar.png            # a file's bytes, relative to this file (media type from its extension)
func ParseSampleResponses(filename string, src []byte) ([]SampleResponse, error) {
	if bytes.HasPrefix(bytes.TrimLeft(src, " \t\r\n"), []byte("HTTP/")) {
		r, err := parseRawResponse(src)
		if err != nil {
			return nil, fmt.Errorf("dryrun: %s: %w", filename, err)
		}
		r.Source = filename
		return []SampleResponse{r}, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("dryrun: %s: %w", filename, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("dryrun: %s: the file is empty", filename)
	}
	root := resolveAlias(doc.Content[0])
	items, list := []*yaml.Node{root}, false
	if root.Kind == yaml.SequenceNode {
		items, list = root.Content, true
		if len(items) == 0 {
			return nil, fmt.Errorf("dryrun: %s: the list of responses is empty", filename)
		}
	}
	out := make([]SampleResponse, 0, len(items))
	for i, n := range items {
		source := filename
		if list {
			source = fmt.Sprintf("%s[%d]", filename, i)
		}
		r, err := sampleResponse(filename, resolveAlias(n))
		if err != nil {
			return nil, fmt.Errorf("dryrun: %s: %w", source, err)
		}
		r.Source = source
		out = append(out, r)
	}
	return out, nil
}

func sampleResponse(filename string, n *yaml.Node) (SampleResponse, error) {
	r := SampleResponse{Status: http.StatusOK, Header: http.Header{}}
	if n.Kind != yaml.MappingNode {
		return r, fmt.Errorf("line %d: a response is a mapping with status, headers and a body", n.Line)
	}
	var defaultType string
	bodies := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		at := func(format string, args ...any) error {
			return fmt.Errorf("line %d: %s: %s", v.Line, k.Value, fmt.Sprintf(format, args...))
		}
		switch k.Value {
		case "status":
			code, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || code < 100 || code > 599 {
				return r, at("must be an HTTP status from 100 to 599")
			}
			r.Status = code
		case "headers":
			if v.Kind != yaml.MappingNode {
				return r, at("must map header names to values")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				name, val := v.Content[j].Value, resolveAlias(v.Content[j+1])
				var values []string
				if err := val.Decode(&values); err != nil {
					var one string
					if err := val.Decode(&one); err != nil {
						return r, at("%s: must be a value or a list of values", name)
					}
					values = []string{one}
				}
				for _, s := range values {
					r.Header.Add(name, s)
				}
			}
		case "body":
			var value any
			if err := v.Decode(&value); err != nil {
				return r, at("%v", err)
			}
			b, err := json.Marshal(value)
			if err != nil {
				return r, at("cannot be written as JSON: %v", err)
			}
			r.Body, defaultType = b, "application/json"
			bodies++
		case "text":
			if v.Kind != yaml.ScalarNode {
				return r, at("must be text")
			}
			r.Body, defaultType = []byte(v.Value), "text/plain; charset=utf-8"
			bodies++
		case "base64":
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(v.Value), ""))
			if v.Kind != yaml.ScalarNode || err != nil {
				return r, at("must be base64 text")
			}
			r.Body, defaultType = b, "application/octet-stream"
			bodies++
		case "file":
			p := v.Value
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(filename), p)
			}
			b, err := os.ReadFile(p)
			if v.Kind != yaml.ScalarNode || err != nil {
				return r, at("cannot read the file: %v", err)
			}
			r.Body, defaultType = b, mime.TypeByExtension(filepath.Ext(p))
			if defaultType == "" {
				defaultType = "application/octet-stream"
			}
			bodies++
		default:
			return r, fmt.Errorf("line %d: unknown key %q (keys: %s)", k.Line, k.Value, strings.Join(sampleResponseKeys, ", "))
		}
	}
	if bodies > 1 {
		return r, fmt.Errorf("line %d: give one of body, text, base64 and file", n.Line)
	}
	if defaultType != "" && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", defaultType)
	}
	return r, nil
}

// parseRawResponse reads a status line, headers and the rest as the body.
func parseRawResponse(src []byte) (SampleResponse, error) {
	br := bufio.NewReader(bytes.NewReader(bytes.TrimLeft(src, " \t\r\n")))
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return SampleResponse{}, fmt.Errorf("the status line: %w", err)
	}
	_, rest, _ := strings.Cut(line, " ")
	code, err := strconv.Atoi(strings.SplitN(strings.TrimSpace(rest), " ", 2)[0])
	if err != nil || code < 100 || code > 599 {
		return SampleResponse{}, fmt.Errorf("the status line %q has no HTTP status", line)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return SampleResponse{}, fmt.Errorf("the headers: %w", err)
	}
	header := http.Header(h)
	header.Del("Content-Length")
	header.Del("Transfer-Encoding")
	body, err := io.ReadAll(br)
	if err != nil {
		return SampleResponse{}, err
	}
	return SampleResponse{Status: code, Header: header, Body: body}, nil
}

// resolveAlias follows a YAML alias (*name) to the node it names.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// ReadSampleResponses reads the sample response files, in order.
func ReadSampleResponses(paths ...string) ([]SampleResponse, error) {
	var out []SampleResponse
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("dryrun: reading a sample response: %w", err)
		}
		rs, err := ParseSampleResponses(p, src)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}
