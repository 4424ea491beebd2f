package mapping

// A skill's stream section as loading compiles it (load_stream.go) and
// running reads it (stream.go).

import "github.com/expr-lang/expr/vm"

// streamFormat is how a streamed body is cut into events.
type streamFormat uint8

const (
	streamAuto  streamFormat = iota // by the answer's media type: SSE, else lines
	streamSSE                       // text/event-stream
	streamLines                     // NDJSON, JSON lines, or any text lines
	streamSplit                     // pieces between separators
)

// streamRule is a skill's stream section, compiled.
type streamRule struct {
	format    streamFormat
	separator []byte
	// when says which answers are streams; nil: a 2xx whose media type is
	// a stream's, or any 2xx when the format is given.
	when              *vm.Program
	name, description string
	// text and data make each event's parts; both nil: the event as a
	// data part when it is JSON, else as a text part.
	text      *template
	data      *vm.Program
	done      *vm.Program // ends the stream early, or nil
	maxChunks int
	maxBytes  int64
}

// streamMediaTypes are the media types of answers read as streams without
// a format or a when.
var streamMediaTypes = map[string]streamFormat{
	"text/event-stream":      streamSSE,
	"application/x-ndjson":   streamLines,
	"application/ndjson":     streamLines,
	"application/jsonl":      streamLines,
	"application/x-jsonl":    streamLines,
	"application/json-lines": streamLines,
}
