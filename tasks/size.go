package tasks

import (
	"encoding/json"
	"unsafe"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// What a stored task costs is estimated from what it holds, in bytes of
// heap: the structs themselves, every string's bytes, and for decoded JSON
// values their maps, slices and boxed numbers. The estimate follows the
// shape of the data rather than its size on the wire: a request of four
// megabytes of empty objects ([{},{},…]) decodes to over a million maps,
// and that is what the byte budgets must see.
const (
	stringHeader = int64(unsafe.Sizeof(""))
	sliceHeader  = int64(unsafe.Sizeof([]any(nil)))
	ifaceBytes   = int64(unsafe.Sizeof(any(nil)))
	// mapBytes is a map's header; mapEntryBytes what each entry adds (key,
	// value, and the slack of the map's groups).
	mapBytes      = 48
	mapEntryBytes = 16 + 16 + 8
	boxedNumber   = 8

	messageBytes  = int64(unsafe.Sizeof(a2a.Message{}))
	partBytes     = int64(unsafe.Sizeof(a2a.Part{}))
	artifactBytes = int64(unsafe.Sizeof(a2a.Artifact{}))
	recordBytes   = int64(unsafe.Sizeof(memEntry{}))
)

func sizeOfString(s string) int64 { return int64(len(s)) }

func sizeOfStrings(ss []string) int64 {
	n := int64(len(ss)) * stringHeader
	for _, s := range ss {
		n += int64(len(s))
	}
	return n
}

// sizeOfMessage is what storing msg costs beyond its slot in a slice.
func sizeOfMessage(msg *a2a.Message) int64 {
	n := sizeOfString(msg.MessageID) + sizeOfString(msg.ContextID) + sizeOfString(msg.TaskID) +
		sizeOfParts(msg.Parts) + sizeOfMap(msg.Metadata) + sizeOfStrings(msg.Extensions) + sizeOfStrings(msg.ReferenceTaskIDs)
	return n
}

func sizeOfArtifact(art *a2a.Artifact) int64 {
	return sizeOfString(art.ArtifactID) + sizeOfString(art.Name) + sizeOfString(art.Description) +
		sizeOfParts(art.Parts) + sizeOfMap(art.Metadata) + sizeOfStrings(art.Extensions)
}

func sizeOfParts(parts []a2a.Part) int64 {
	n := int64(len(parts)) * partBytes
	for i := range parts {
		p := &parts[i]
		n += int64(len(p.Text)+len(p.Raw)+len(p.URL)+len(p.Filename)+len(p.MediaType)) +
			sizeOfValue(p.Data) + sizeOfMap(p.Metadata)
	}
	return n
}

func sizeOfMap(m map[string]any) int64 {
	if m == nil {
		return 0
	}
	n := int64(mapBytes) + int64(len(m))*mapEntryBytes
	for k, v := range m {
		n += int64(len(k)) + sizeOfValue(v)
	}
	return n
}

// sizeOfValue is what a decoded JSON value holds behind its interface.
func sizeOfValue(v any) int64 {
	switch v := v.(type) {
	case nil, bool:
		return 0
	case float64, int64, int, int32:
		return boxedNumber
	case string:
		return stringHeader + int64(len(v))
	case json.Number:
		return stringHeader + int64(len(v))
	case json.RawMessage:
		return sliceHeader + int64(len(v))
	case []byte:
		return sliceHeader + int64(len(v))
	case map[string]any:
		return sizeOfMap(v)
	case []any:
		n := sliceHeader + int64(len(v))*ifaceBytes
		for _, e := range v {
			n += sizeOfValue(e)
		}
		return n
	default:
		// Values the decoders do not make (a skill's expression may): a
		// flat guess, as they are small in practice.
		return 64
	}
}

// sizeOfStoredMessage is what a message adds to a history.
func sizeOfStoredMessage(msg *a2a.Message) int64 { return messageBytes + sizeOfMessage(msg) }

// sizeOfStoredArtifact is what an artifact adds to a task.
func sizeOfStoredArtifact(art *a2a.Artifact) int64 { return artifactBytes + sizeOfArtifact(art) }

// sizeOfStatus is what a status adds to a task: its message, kept in the
// history (ids filled in by the Manager are counted as a UUID each).
func sizeOfStatus(st *a2a.TaskStatus) int64 {
	if st.Message == nil {
		return 0
	}
	return sizeOfStoredMessage(st.Message) + 3*uuidBytes
}

const uuidBytes = 36

// sizeOfNewTask is what a new task takes with msg as its first message.
func sizeOfNewTask(msg *a2a.Message, metadata map[string]any) int64 {
	return recordBytes + 2*uuidBytes + sizeOfMap(metadata) + sizeOfStoredMessage(msg)
}
