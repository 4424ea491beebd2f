package mapping

// Mapping an upstream answer to an Outcome: response rules, artifacts,
// file parts and the default mapping.

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/vm"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// mapResponse maps the last call's answer: the first rule that matches,
// or the default mapping.
func (sk *Skill) mapResponse(m *vm.VM, vars *exprVars, call *Call, st *step, resp *http.Response, body []byte) Outcome {
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"))
	if len(sk.rules) == 0 {
		return sk.defaultOutcome(call, resp, body, mediaType)
	}
	sk.bindStep(vars, st, resp, body, mediaType)
	if out, ok := sk.applyRules(m, vars, call, sk.rules); ok {
		return out
	}
	return sk.defaultOutcome(call, resp, body, mediaType)
}

// stepOutcome maps the answer of a step that is not the last: a rule that
// matches ends the run, as does a status other than 2xx; done is false
// when the run goes on to the next step.
func (sk *Skill) stepOutcome(m *vm.VM, vars *exprVars, call *Call, st *step, resp *http.Response, body []byte) (out Outcome, done bool) {
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"))
	sk.bindStep(vars, st, resp, body, mediaType)
	if out, ok := sk.applyRules(m, vars, call, st.rules); ok {
		return out, true
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return sk.defaultOutcome(call, resp, body, mediaType), true
	}
	return Outcome{}, false
}

// applyRules applies the first rule that matches; ok is false when none
// does.
func (sk *Skill) applyRules(m *vm.VM, vars *exprVars, call *Call, rules []rule) (Outcome, bool) {
	for i := range rules {
		r := &rules[i]
		if r.when != nil {
			v, err := m.Run(r.when, vars)
			if err != nil {
				return sk.fail(call, responseFailure(fmt.Errorf("response rule %d: when: %w", i+1, err))), true
			}
			if match, _ := v.(bool); !match {
				continue
			}
		}
		out, err := sk.applyRule(m, vars, call, r)
		if err != nil {
			var big *fileTooLarge
			if errors.As(err, &big) {
				return sk.fail(call, sk.fileFailure(big)), true
			}
			return sk.fail(call, responseFailure(fmt.Errorf("response rule %d: %w", i+1, err))), true
		}
		return out, true
	}
	return Outcome{}, false
}

// bindStep binds a call's answer as response, and as steps.<name> when
// expressions read steps.
func (sk *Skill) bindStep(vars *exprVars, st *step, resp *http.Response, body []byte, mediaType string) {
	vars.Response = responseVars{}
	sk.bindResponse(vars, resp, body, mediaType)
	if sk.needs&useSteps != 0 && st.name != "" {
		if vars.Steps == nil {
			vars.Steps = make(map[string]responseVars, len(sk.steps))
		}
		vars.Steps[st.name] = vars.Response
	}
}

func (sk *Skill) bindResponse(vars *exprVars, resp *http.Response, body []byte, mediaType string) {
	vars.Response.Status = resp.StatusCode
	if sk.needs&useHeaders != 0 {
		h := make(map[string]string, len(resp.Header))
		for k, v := range resp.Header {
			h[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		vars.Response.Headers = h
	}
	if sk.needs&useBody != 0 && isJSON(mediaType, body) {
		// An undecodable body reads as null; response.text still has it.
		_ = jsonx.UnmarshalKeepingIntegers(body, &vars.Response.Body)
	}
	if sk.needs&useText != 0 {
		vars.Response.Text = string(body)
	}
	if sk.needs&useBytes != 0 {
		vars.Response.Bytes = body
	}
}

func (sk *Skill) applyRule(m *vm.VM, vars *exprVars, call *Call, r *rule) (Outcome, error) {
	var text string
	if r.message != nil {
		var err error
		if text, err = r.message.text(m, vars); err != nil {
			return Outcome{}, fmt.Errorf("message: %w", err)
		}
	}
	var arts []a2a.Artifact
	for i := range r.artifacts {
		a := &r.artifacts[i]
		part, ok, err := sk.artifactPart(m, vars, a)
		if err != nil {
			return Outcome{}, fmt.Errorf("artifact %d: %w", i+1, err)
		}
		if ok {
			arts = append(arts, a2a.Artifact{Name: a.name, Description: a.description,
				Parts: []a2a.Part{part}})
		}
	}
	if r.ask != nil {
		v, err := m.Run(r.ask, vars)
		if err != nil {
			return Outcome{}, fmt.Errorf("ask: %w", err)
		}
		problems, err := sk.askedProblems(v)
		if err != nil {
			return Outcome{}, fmt.Errorf("ask: %w", err)
		}
		if text == "" {
			text = askText(fmt.Sprintf("Skill %q", sk.ID), problems)
		}
		out := sk.askFor(call, text, problems)
		out.Artifacts = arts
		return out, nil
	}
	if text == "" && r.state != a2a.TaskStateCompleted {
		text = sk.stateText(r.state)
	}
	return sk.finish(call, r.state, text, arts), nil
}

// artifactPart makes an artifact's one part; ok is false for a null value
// or an empty text, which leave the artifact out.
func (sk *Skill) artifactPart(m *vm.VM, vars *exprVars, a *artifactRule) (part a2a.Part, ok bool, err error) {
	switch {
	case a.data != nil:
		v, err := m.Run(a.data, vars)
		if err != nil || v == nil {
			return part, false, wrap("data", err)
		}
		// Encoded once here: a value JSON cannot hold fails this run
		// rather than every later answer that carries the task.
		if pairs, ok := v.(map[any]any); ok {
			if v, err = stringKeyed(pairs); err != nil {
				return part, false, wrap("data", err)
			}
		}
		raw, err := jsonx.AppendValue(nil, v)
		if err != nil {
			return part, false, fmt.Errorf("data: the value cannot be written as JSON: %w", err)
		}
		return a2a.DataPart(json.RawMessage(raw)), true, nil
	case a.text != nil:
		s, err := a.text.text(m, vars)
		if err != nil || s == "" {
			return part, false, wrap("text", err)
		}
		return a2a.TextPart(s), true, nil
	}
	return sk.filePart(m, vars, a.file, a.name)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// filePart makes a file part: bytes inline, up to MaxFileBytes, or a URL.
func (sk *Skill) filePart(m *vm.VM, vars *exprVars, f *fileRule, artifact string) (a2a.Part, bool, error) {
	mediaType := mediaTypeOf(vars.Response.Headers["content-type"])
	if f.mediaType != nil {
		s, err := f.mediaType.text(m, vars)
		if err != nil {
			return a2a.Part{}, false, wrap("file: media_type", err)
		}
		mediaType = s
	}
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	name := dispositionFilename(vars.Response.Headers["content-disposition"])
	if f.filename != nil {
		s, err := f.filename.text(m, vars)
		if err != nil {
			return a2a.Part{}, false, wrap("file: filename", err)
		}
		name = s
	}
	part := a2a.Part{MediaType: mediaType, Filename: name}
	if f.url != nil {
		u, err := f.url.text(m, vars)
		if err != nil || u == "" {
			return part, false, wrap("file: url", err)
		}
		part.Kind, part.URL = a2a.PartURL, u
		return part, true, nil
	}
	raw := vars.Response.Bytes
	if f.bytes != nil {
		v, err := m.Run(f.bytes, vars)
		if err != nil {
			return part, false, wrap("file: bytes", err)
		}
		switch b := v.(type) {
		case nil:
			return part, false, nil
		case []byte:
			raw = b
		case string:
			raw = []byte(b)
		default:
			return part, false, fmt.Errorf("file: bytes is a %s, not bytes or a string", kindName(v))
		}
	}
	if int64(len(raw)) > sk.MaxFileBytes {
		return part, false, &fileTooLarge{name: cmpOr(name, artifact), size: len(raw)}
	}
	part.Kind, part.Raw = a2a.PartRaw, raw
	return part, true, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fileTooLarge is a file over the inline limit.
type fileTooLarge struct {
	name string
	size int
}

func (e *fileTooLarge) Error() string {
	return fmt.Sprintf("file %q of %d bytes is over the inline limit", e.name, e.size)
}

func (sk *Skill) fileFailure(f *fileTooLarge) failure {
	what := "the file"
	if f.name != "" {
		what = fmt.Sprintf("the file %q", f.name)
	}
	return failure{state: a2a.TaskStateFailed, stage: "response",
		public: fmt.Sprintf("failed: %s is %s, larger than the limit of %s for files sent inline.",
			what, formatBytes(int64(f.size)), formatBytes(sk.MaxFileBytes)),
		err: f}
}

// dispositionFilename is the filename of a Content-Disposition header, or "".
func dispositionFilename(cd string) string {
	if cd == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(cd)
	if err != nil || params["filename"] == "" {
		return ""
	}
	return path.Base(strings.ReplaceAll(params["filename"], `\`, "/"))
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
// with the body as an artifact; 4xx leaves it as the skill's client_errors
// says (failed by default); anything else fails it. The upstream's own
// error text is shown only with error_detail.
func (sk *Skill) defaultOutcome(call *Call, resp *http.Response, body []byte, mediaType string) Outcome {
	status := resp.StatusCode
	if status >= 200 && status <= 299 {
		if len(body) == 0 {
			return sk.finish(call, a2a.TaskStateCompleted, "", nil)
		}
		part := bodyPart(body, mediaType)
		if part.Kind == a2a.PartRaw {
			part.Filename = dispositionFilename(resp.Header.Get("Content-Disposition"))
			if int64(len(body)) > sk.MaxFileBytes {
				return sk.fail(call, sk.fileFailure(&fileTooLarge{name: part.Filename, size: len(body)}))
			}
		}
		return sk.finish(call, a2a.TaskStateCompleted, "", []a2a.Artifact{{Name: "result", Parts: []a2a.Part{part}}})
	}
	answered := serviceAnswered(status) + "."
	detail := ""
	if sk.errorDetail {
		if d := errorDetail(body, mediaType); d != "" {
			detail = fmt.Sprintf(" It said: %q.", d)
		}
	}
	err := fmt.Errorf("upstream answered %d and no response rule matched", status)
	clientError := status >= 400 && status <= 499
	switch {
	case clientError && sk.clientErrors == a2a.TaskStateInputRequired:
		problems := sk.fieldProblems(body, mediaType)
		text := fmt.Sprintf("Skill %q needs different input: %s%s", sk.ID, answered, detail)
		if len(problems) > 0 {
			text += " " + askText("It", problems)
		}
		return sk.askFor(call, text, problems)
	case clientError && sk.clientErrors == a2a.TaskStateRejected:
		return sk.fail(call, failure{state: a2a.TaskStateRejected, stage: "response",
			public: "cannot do this: " + answered + detail, err: err})
	}
	return sk.fail(call, failure{state: a2a.TaskStateFailed, stage: "response", public: "failed: " + answered + detail, err: err})
}

// serviceAnswered says which status the service answered, for the caller:
// "the service answered HTTP 503 Service Unavailable".
func serviceAnswered(status int) string {
	if name := http.StatusText(status); name != "" {
		return fmt.Sprintf("the service answered HTTP %d %s", status, name)
	}
	return fmt.Sprintf("the service answered HTTP %d", status)
}

// bodyPart is a body as a part: JSON as data, text as text, the rest as
// raw bytes with their media type.
func bodyPart(body []byte, mediaType string) a2a.Part {
	switch {
	case isJSON(mediaType, body) && jsonx.Valid(body):
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
