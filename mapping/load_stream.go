package mapping

// Loading a skill's stream section: how a streamed answer is cut into
// events, and how each event becomes a chunk of the artifact.

import (
	"gopkg.in/yaml.v3"
)

// DefaultMaxStreamChunks bounds the events of one streamed answer when the
// skill says nothing.
const DefaultMaxStreamChunks = 1000

var streamKeys = []string{"format", "separator", "when", "artifact", "done", "max_chunks", "max_bytes"}

// stream reads a skill's stream section. maxBytes is the skill's
// max_response_bytes, the default bound of the stream.
func (l *loader) stream(n *yaml.Node, key string, maxBytes int64) *streamRule {
	s := &streamRule{maxChunks: DefaultMaxStreamChunks, maxBytes: maxBytes, name: "result"}
	var sepNode *yaml.Node
	l.fields(n, key, streamKeys, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		switch name {
		case "format":
			switch f, _ := l.scalar(v, fkey); f {
			case "sse":
				s.format = streamSSE
			case "lines":
				s.format = streamLines
			case "split":
				s.format = streamSplit
			case "":
			default:
				l.errorf(v, fkey, "must be sse, lines or split, not %q", f)
			}
		case "separator":
			sepNode = v
			if sep, ok := l.scalar(v, fkey); ok {
				if sep == "" {
					l.errorf(v, fkey, "must not be empty")
				}
				s.separator = []byte(sep)
			}
		case "when":
			s.when = l.expression(v, fkey, phaseStream, true)
		case "artifact":
			l.fields(v, fkey, []string{"name", "description", "text", "data"}, func(name string, v *yaml.Node) {
				akey := fkey + "." + name
				switch name {
				case "name":
					s.name, _ = l.scalar(v, akey)
				case "description":
					s.description, _ = l.scalar(v, akey)
				case "text":
					s.text = l.template(v, akey, tplOpts{phase: phaseStream})
				case "data":
					s.data = l.expression(v, akey, phaseStream, false)
				}
			})
		case "done":
			s.done = l.expression(v, fkey, phaseStream, true)
		case "max_chunks":
			s.maxChunks = l.positiveInt(v, fkey)
		case "max_bytes":
			s.maxBytes = l.size(v, fkey)
		}
	})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	switch {
	case s.format == streamSplit && sepNode == nil:
		l.errorf(n, key+".separator", "is required with format split: the text between two chunks, e.g. \"\\n\\n\"")
	case s.format != streamSplit && sepNode != nil:
		l.errorf(sepNode, key+".separator", "is only for format split")
	}
	return s
}
