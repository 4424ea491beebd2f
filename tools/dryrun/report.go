package dryrun

// The dry run's report as text.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// maxShownBody is how much of a body the report shows.
const maxShownBody = 16 << 10

// Write renders the report as text: the skill chosen and why, the
// arguments, each upstream call and its answer, the outcome and the
// JSON-RPC answer.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	r.writeMessage(&b)
	r.writeSelection(&b)
	if r.Refusal == nil && r.Skill != nil {
		r.writeArguments(&b)
		for _, p := range r.Progress {
			fmt.Fprintf(&b, "\nProgress (working): %s\n", messageText(p))
		}
		for i, x := range r.Exchanges {
			writeExchange(&b, i+1, x)
		}
		if r.Stopped {
			b.WriteString("\nNo sample response is left for this call, so the dry run stops here: give one response per call" +
				" (a retry is a call), or call the upstream for real.\n")
		}
		switch {
		case r.UnusedResponses == 1:
			b.WriteString("\n1 sample response was not used: the run made fewer calls.\n")
		case r.UnusedResponses > 1:
			fmt.Fprintf(&b, "\n%d sample responses were not used: the run made fewer calls.\n", r.UnusedResponses)
		}
	}
	r.writeOutcome(&b)
	if r.Result != nil {
		fmt.Fprintf(&b, "\nA2A answer (%s, JSON-RPC):\n%s\n", r.Sample.Version, r.Result)
		switch {
		case !r.Sample.Streaming || r.Refusal != nil:
		case r.Skill != nil && r.Skill.ReturnsMessage:
			b.WriteString("(A streaming request gets this message as the stream's one event.)\n")
		default:
			b.WriteString("(A streaming request gets the task as a stream of events: the task, its updates, and this final state.)\n")
		}
	}
	if r.MCPTool != nil {
		fmt.Fprintf(&b, "\nAs an MCP tool (with mcp on), tools/list shows:\n%s\n", r.MCPTool)
	}
	if r.MCPResult != nil {
		fmt.Fprintf(&b, "\nand tools/call answers this result (to a client that can answer a question for missing arguments):\n%s\n", r.MCPResult)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeMessage(b *strings.Builder) {
	m := r.Sample.Message
	kinds := make([]string, len(m.Parts))
	for i := range m.Parts {
		kinds[i] = partKind(m.Parts[i].Kind)
	}
	fmt.Fprintf(b, "Message: A2A %s, %d part%s (%s)", r.Sample.Version, len(m.Parts), plural(len(m.Parts)), strings.Join(kinds, ", "))
	if v, ok := m.Metadata[mapping.MetadataSkillKey]; ok {
		fmt.Fprintf(b, ", metadata.skill %s", displayValue(v))
	}
	b.WriteString("\n")
	if m.TaskID != "" {
		fmt.Fprintf(b, "  It continues task %q: the server would run that task's skill with the task's history;"+
			" the dry run chooses as for a new task and reads this message alone.\n", m.TaskID)
	}
	if c := r.Sample.Configuration; c != nil {
		if len(c.AcceptedOutputModes) > 0 {
			fmt.Fprintf(b, "  It accepts: %s\n", strings.Join(c.AcceptedOutputModes, ", "))
		}
		if c.ReturnImmediately {
			b.WriteString("  It asks for an answer at once, before the task ends; the dry run waits for the outcome.\n")
		}
	}
}

func (r *Report) writeSelection(b *strings.Builder) {
	b.WriteString("\n")
	switch r.Reason {
	case mapping.NotSelected:
		if r.Selection != nil {
			fmt.Fprintf(b, "Skill: none\n  %s\n", r.Selection.Error())
		}
	case mapping.SelectedByName:
		fmt.Fprintf(b, "Skill: %s\n  Chosen because the message names it in metadata.skill.\n", r.Skill.ID)
	case mapping.SelectedAsOnlySkill:
		fmt.Fprintf(b, "Skill: %s\n  Chosen because it is the only skill in the file", r.Skill.ID)
		if r.Skill.MatchSource() != "" {
			b.WriteString(" (its match predicate is not consulted)")
		}
		b.WriteString(".\n")
	case mapping.SelectedByMatch:
		fmt.Fprintf(b, "Skill: %s\n  Chosen because its match predicate holds (the first that holds, in file order).\n", r.Skill.ID)
	}
	if len(r.Predicates) > 0 {
		b.WriteString("  The match predicates, in file order:\n")
		width := 0
		for _, p := range r.Predicates {
			width = max(width, len(p.Skill))
		}
		for _, p := range r.Predicates {
			verdict := "does not hold"
			switch {
			case p.Err != nil:
				verdict = "fails, so does not hold: " + strings.Join(strings.Fields(p.Err.Error()), " ")
			case p.Holds && r.Skill != nil && p.Skill == r.Skill.ID:
				verdict = "holds (chosen)"
			case p.Holds:
				verdict = "holds too, but comes later"
			}
			fmt.Fprintf(b, "    %-*s  %s\n    %*s  %s\n", width, p.Skill, p.Source, width, "", verdict)
		}
	}
	if e := r.Refusal; e != nil {
		// As the caller's version writes it: 0.3 puts the detail in the
		// message, 1.0 names the field apart.
		detail := e.Message
		if e.Field != "" {
			detail += ": " + e.Field + ": " + e.Description
		}
		fmt.Fprintf(b, "\nThe server refuses the request before running anything (error %d): %s\n", e.Code, detail)
	}
}

func (r *Report) writeArguments(b *strings.Builder) {
	problems := make(map[string]string, len(r.Problems))
	for _, p := range r.Problems {
		problems[p.Name] = p.Why
	}
	names := r.Skill.DeclaredArguments()
	switch {
	case names != nil:
		b.WriteString("\nArguments:\n")
	case len(r.Arguments) == 0:
		b.WriteString("\nArguments: none (the skill declares none, and the message has no data part holding an object)\n")
	default:
		b.WriteString("\nArguments (the skill declares none: the objects of the data parts, merged):\n")
		names = slices.Sorted(maps.Keys(r.Arguments))
	}
	for _, name := range names {
		v, given := r.Arguments[name]
		why, bad := problems[name]
		switch {
		case bad && why == "":
			fmt.Fprintf(b, "  %s: missing, and required\n", name)
		case bad:
			fmt.Fprintf(b, "  %s: cannot be used: it %s\n", name, why)
		case given:
			fmt.Fprintf(b, "  %s = %s\n", name, displayValue(v))
		default:
			fmt.Fprintf(b, "  %s: not given\n", name)
		}
	}
	if len(r.Problems) > 0 {
		b.WriteString("  The run asks for what is missing (input-required) and calls nothing.\n")
	}
}

func writeExchange(b *strings.Builder, n int, x *Exchange) {
	fmt.Fprintf(b, "\nUpstream call %d:\n  %s %s\n", n, x.Method, x.URL)
	writeHeader(b, x.Header)
	if len(x.Body) > 0 {
		fmt.Fprintf(b, "  Content-Length: %d\n", len(x.Body))
		writeBody(b, x.Body)
	}
	if x.Err != nil {
		fmt.Fprintf(b, "  It got no answer: %v\n", x.Err)
	}
	resp := x.Response
	if resp == nil {
		return
	}
	from := "from the upstream"
	if resp.Source != "" {
		from = "from " + resp.Source
	}
	fmt.Fprintf(b, "\nUpstream answer %d (%s):\n  HTTP %d %s\n", n, from, resp.Status, http.StatusText(resp.Status))
	writeHeader(b, resp.Header)
	writeBody(b, resp.Body)
}

func writeHeader(b *strings.Builder, h http.Header) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			fmt.Fprintf(b, "  %s: %s\n", name, v)
		}
	}
}

// writeBody shows a text body as it is, indented, and says how large a
// binary one is.
func writeBody(b *strings.Builder, body []byte) {
	if len(body) == 0 {
		return
	}
	b.WriteString("\n")
	shown := body
	if len(shown) > maxShownBody {
		shown = shown[:maxShownBody]
	}
	if !printable(shown) {
		fmt.Fprintf(b, "  (%d bytes of binary data)\n", len(body))
		return
	}
	for line := range strings.Lines(string(shown)) {
		b.WriteString("  ")
		b.WriteString(strings.TrimRight(line, "\r\n"))
		b.WriteString("\n")
	}
	if len(shown) < len(body) {
		fmt.Fprintf(b, "  … (%d bytes in all)\n", len(body))
	}
}

// printable reports whether b is UTF-8 text without control characters
// other than white space (a cut multi-byte rune at the end is allowed).
func printable(b []byte) bool {
	for len(b) > 0 {
		c, size := utf8.DecodeRune(b)
		if c == utf8.RuneError && size <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if unicode.IsControl(c) && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
		b = b[size:]
	}
	return true
}

func (r *Report) writeOutcome(b *strings.Builder) {
	out := r.Outcome
	if out == nil {
		return
	}
	if out.State == a2a.TaskStateUnspecified {
		b.WriteString("\nOutcome: a message (the skill answers without a task)\n")
	} else {
		fmt.Fprintf(b, "\nOutcome: %s\n", out.State)
	}
	if out.Message != nil {
		if text := messageText(out.Message); text != "" {
			fmt.Fprintf(b, "  Message: %s\n", text)
		}
		for _, p := range out.Message.Parts {
			if p.Kind != a2a.PartText {
				fmt.Fprintf(b, "  Message part: %s\n", describePart(&p))
			}
		}
	}
	for _, a := range out.Artifacts {
		parts := make([]string, len(a.Parts))
		for i := range a.Parts {
			parts[i] = describePart(&a.Parts[i])
		}
		name := a.Name
		if name == "" {
			name = "(unnamed)"
		}
		fmt.Fprintf(b, "  Artifact %s: %s\n", name, strings.Join(parts, "; "))
	}
	for _, detail := range out.Logged {
		fmt.Fprintf(b, "  Detail for the server's log: %s\n", detail)
	}
}

func messageText(m *a2a.Message) string {
	var texts []string
	for _, p := range m.Parts {
		if p.Kind == a2a.PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, " ")
}

func describePart(p *a2a.Part) string {
	switch p.Kind {
	case a2a.PartText:
		return "text " + displayValue(p.Text)
	case a2a.PartData:
		return "data " + displayValue(p.Data)
	case a2a.PartRaw:
		return fmt.Sprintf("file %q (%s, %d bytes)", p.Filename, p.MediaType, len(p.Raw))
	case a2a.PartURL:
		return fmt.Sprintf("file %q (%s) at %s", p.Filename, p.MediaType, p.URL)
	}
	return "an empty part"
}

// displayValue writes a value as compact JSON, bytes as their size, cut
// to a line's worth.
func displayValue(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(shrinkBytes(v)); err != nil {
		return fmt.Sprint(v)
	}
	b := bytes.TrimSpace(buf.Bytes())
	const maxLen = 400
	if len(b) > maxLen {
		cut := maxLen
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// shrinkBytes replaces byte slices (file contents) with a note of their
// size.
func shrinkBytes(v any) any {
	switch v := v.(type) {
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(v))
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = shrinkBytes(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = shrinkBytes(x)
		}
		return out
	}
	return v
}

// partKind names a part's kind as the report shows it.
func partKind(k a2a.PartKind) string {
	switch k {
	case a2a.PartText:
		return "text"
	case a2a.PartData:
		return "data"
	case a2a.PartRaw:
		return "raw"
	case a2a.PartURL:
		return "url"
	}
	return "empty"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
