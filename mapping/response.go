package mapping

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/expr-lang/expr/vm"
	"github.com/google/uuid"
)

// rule is one case of a skill's response section.
type rule struct {
	when      *vm.Program // nil: always
	state     a2a.TaskState
	message   *template // nil: none
	artifacts []artifactRule
}

// artifactRule makes one artifact from data (any JSON value) or text.
type artifactRule struct {
	name, description string
	data              *vm.Program
	text              *template
}

// mapResponse applies the first rule that matches, or the default mapping.
func (sk *Skill) mapResponse(m *vm.VM, e *env, call *Call, resp *http.Response, body []byte) Outcome {
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"))
	if len(sk.rules) == 0 {
		return sk.defaultOutcome(call, resp.StatusCode, body, mediaType)
	}
	sk.bindResponse(e, resp, body, mediaType)
	for i := range sk.rules {
		r := &sk.rules[i]
		if r.when != nil {
			v, err := m.Run(r.when, e)
			if err != nil {
				return sk.fail(call, responseFailure(fmt.Errorf("response rule %d: when: %w", i+1, err)))
			}
			if match, _ := v.(bool); !match {
				continue
			}
		}
		out, err := sk.applyRule(m, e, call, r)
		if err != nil {
			return sk.fail(call, responseFailure(fmt.Errorf("response rule %d: %w", i+1, err)))
		}
		return out
	}
	return sk.defaultOutcome(call, resp.StatusCode, body, mediaType)
}

func (sk *Skill) bindResponse(e *env, resp *http.Response, body []byte, mediaType string) {
	e.Response.Status = resp.StatusCode
	if sk.needs&useHeaders != 0 {
		h := make(map[string]string, len(resp.Header))
		for k, v := range resp.Header {
			h[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		e.Response.Headers = h
	}
	if sk.needs&useBody != 0 && isJSON(mediaType, body) {
		// An undecodable body reads as null; response.text still has it.
		_ = json.Unmarshal(body, &e.Response.Body)
	}
	if sk.needs&useText != 0 {
		e.Response.Text = string(body)
	}
}

func (sk *Skill) applyRule(m *vm.VM, e *env, call *Call, r *rule) (Outcome, error) {
	var text string
	if r.message != nil {
		var err error
		if text, err = r.message.text(m, e); err != nil {
			return Outcome{}, fmt.Errorf("message: %w", err)
		}
	}
	var arts []a2a.Artifact
	for i := range r.artifacts {
		a := &r.artifacts[i]
		var part a2a.Part
		if a.data != nil {
			v, err := m.Run(a.data, e)
			if err != nil {
				return Outcome{}, fmt.Errorf("artifact %d: data: %w", i+1, err)
			}
			if v == nil {
				continue
			}
			part = a2a.DataPart(v)
		} else {
			s, err := a.text.text(m, e)
			if err != nil {
				return Outcome{}, fmt.Errorf("artifact %d: text: %w", i+1, err)
			}
			if s == "" {
				continue
			}
			part = a2a.TextPart(s)
		}
		arts = append(arts, a2a.Artifact{ArtifactID: uuid.NewString(), Name: a.name, Description: a.description,
			Parts: []a2a.Part{part}})
	}
	if text == "" && r.state != a2a.TaskStateCompleted {
		text = sk.stateText(r.state)
	}
	return sk.finish(call, r.state, text, arts), nil
}

// stateText is the message of a rule that leaves a task unfinished and
// says nothing itself.
func (sk *Skill) stateText(st a2a.TaskState) string {
	switch st {
	case a2a.TaskStateRejected:
		return fmt.Sprintf("Skill %q declined the request.", sk.ID)
	case a2a.TaskStateInputRequired:
		return fmt.Sprintf("Skill %q needs more input.", sk.ID)
	case a2a.TaskStateAuthRequired:
		return fmt.Sprintf("Skill %q needs authorization.", sk.ID)
	}
	return fmt.Sprintf("Skill %q failed.", sk.ID)
}

// defaultOutcome maps a response no rule claimed: 2xx completes the task
// with the body as an artifact, anything else fails it.
func (sk *Skill) defaultOutcome(call *Call, status int, body []byte, mediaType string) Outcome {
	if status < 200 || status > 299 {
		name := http.StatusText(status)
		if name != "" {
			name = " " + name
		}
		return sk.fail(call, failure{
			state: a2a.TaskStateFailed, stage: "response",
			public: fmt.Sprintf("failed: the service answered HTTP %d%s.", status, name),
			err:    fmt.Errorf("upstream answered %d and no response rule matched", status),
		})
	}
	var arts []a2a.Artifact
	if len(body) > 0 {
		arts = []a2a.Artifact{{ArtifactID: uuid.NewString(), Name: "result", Parts: []a2a.Part{bodyPart(body, mediaType)}}}
	}
	return sk.finish(call, a2a.TaskStateCompleted, "", arts)
}

// bodyPart is a body as a part: JSON as data, text as text, the rest as
// raw bytes with their media type.
func bodyPart(body []byte, mediaType string) a2a.Part {
	switch {
	case isJSON(mediaType, body) && json.Valid(body):
		return a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(body)}
	case (mediaType == "" || strings.HasPrefix(mediaType, "text/") || isJSON(mediaType, nil)) && utf8.Valid(body):
		p := a2a.TextPart(string(body))
		if mediaType != "text/plain" {
			p.MediaType = mediaType
		}
		return p
	}
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	return a2a.Part{Kind: a2a.PartRaw, Raw: body, MediaType: mediaType}
}

// finish assembles an outcome. A skill that returns a message puts all of
// a completed run into it.
func (sk *Skill) finish(call *Call, state a2a.TaskState, text string, arts []a2a.Artifact) Outcome {
	if sk.ReturnsMessage && state == a2a.TaskStateCompleted {
		n := len(arts)
		if text != "" {
			n++
		}
		parts := make([]a2a.Part, 0, n)
		if text != "" {
			parts = append(parts, a2a.TextPart(text))
		}
		for i := range arts {
			parts = append(parts, arts[i].Parts...)
		}
		if len(parts) == 0 {
			parts = append(parts, a2a.TextPart("Done."))
		}
		return Outcome{State: state, Message: agentMessage(call, parts)}
	}
	out := Outcome{State: state, Artifacts: arts}
	if text != "" {
		out.Message = agentMessage(call, []a2a.Part{a2a.TextPart(text)})
	}
	return out
}

func agentMessage(call *Call, parts []a2a.Part) *a2a.Message {
	return &a2a.Message{MessageID: uuid.NewString(), ContextID: call.ContextID, TaskID: call.TaskID,
		Role: a2a.RoleAgent, Parts: parts}
}

// mediaTypeOf is a Content-Type without parameters, lower-cased.
func mediaTypeOf(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(ct)
		}
	}
	return ct
}

// isJSON reports whether a body of this media type is JSON: a JSON media
// type, or none at all and a body that parses.
func isJSON(mediaType string, body []byte) bool {
	if mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") {
		return true
	}
	return mediaType == "" && len(body) > 0 && json.Valid(body)
}
