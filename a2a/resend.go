package a2a

import "bytes"

// SameContent reports whether a and b say the same thing: the same role,
// parts, metadata, extensions and referenced tasks, compared as the 1.0
// codec writes them (so that a message read back from a shared store
// compares equal to the one decoded from a request). Their ids are not
// compared: a message sent again carries its own id, and the agent fills
// in the task and context ids of the copy it keeps.
func SameContent(a, b *Message) bool {
	ea, okA := contentBytes(a)
	eb, okB := contentBytes(b)
	return okA && okB && bytes.Equal(ea, eb)
}

// contentBytes is m encoded without its ids.
func contentBytes(m *Message) ([]byte, bool) {
	c := *m
	c.MessageID, c.TaskID, c.ContextID = "", "", ""
	b, err := appendMessage(nil, form10, &c)
	return b, err == nil
}
