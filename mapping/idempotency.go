package mapping

// The Idempotency-Key a request sends (draft-ietf-httpapi-idempotency-key-
// header), so that the skill's own retries, and an upstream that dedupes by
// the key, apply a POST once.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"

	"github.com/expr-lang/expr/vm"
	"github.com/google/uuid"
)

// keyNamespace makes the default keys of caddy-a2a a name space of their
// own (RFC 9562 name-based UUIDs).
var keyNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/caddy-a2a/caddy-a2a/idempotency-key"))

// set puts the key on req, built once: every retry of req sends it again.
// The request's header map may be shared with other requests, so it is
// copied.
func (k *idempotencyKey) set(req *http.Request, m *vm.VM, vars *exprVars, call *Call, stepName string) error {
	var key string
	if k.value == nil {
		key = defaultKey(call, stepName)
	} else {
		v, err := k.value.value(m, vars)
		if err != nil {
			return err
		}
		s, ok := scalarString(v)
		switch {
		case v == nil || s == "":
			return &inputError{"the idempotency key is empty"}
		case !ok:
			return &inputError{fmt.Sprintf("the idempotency key is a %s, not a single value", kindName(v))}
		}
		key = s
	}
	sf, ok := sfString(key)
	if !ok {
		return &inputError{"the idempotency key may hold only printable ASCII characters"}
	}
	req.Header = req.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header[idempotencyHeader] = []string{sf}
	return nil
}

// defaultKey is the same for the same request of the same turn of a task
// (the task, the message that started the run, the step), whichever agent
// replica sends it, and tells nothing of them: a SHA-256 name-based UUID
// (RFC 9562 §5.8). A run without a task (a skill that answers with a
// message, whose message id the client chose) gets a random key, so that
// no client can choose another's.
func defaultKey(call *Call, stepName string) string {
	if call.TaskID == "" {
		return uuid.NewString()
	}
	msgID := ""
	if call.Message != nil {
		msgID = call.Message.MessageID
	}
	data := make([]byte, 0, 3*binary.MaxVarintLen64+len(call.TaskID)+len(msgID)+len(stepName))
	for _, s := range []string{call.TaskID, msgID, stepName} {
		data = binary.AppendUvarint(data, uint64(len(s)))
		data = append(data, s...)
	}
	return uuid.NewHash(sha256.New(), keyNamespace, data, 8).String()
}

// sfString writes s as a Structured Field String (RFC 9651 §3.3.3): quoted,
// with '"' and '\' escaped; ok is false when s holds other than printable
// ASCII.
func sfString(s string) (string, bool) {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", false
		}
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return string(append(b, '"')), true
}
