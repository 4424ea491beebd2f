package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Standalone codecs of single model values, for tests and tools. Decoding
// checks enum names, parts, base64 and timestamps, but not the proto's
// REQUIRED fields: it reads results back as agents write them. Requests are
// checked in full by DecodeRequest.

// MarshalMessage encodes m as version v writes it.
func MarshalMessage(v Version, m *Message) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("a2a: marshal %s message: nil message", v)
	}
	b, err := appendMessage(nil, v, m)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal %s message: %w", v, err)
	}
	return b, nil
}

// UnmarshalMessage decodes a message written in version v.
func UnmarshalMessage(v Version, b []byte) (*Message, error) {
	m := new(Message)
	var err error
	if v == V10 {
		err = unmarshalMessage[part10](v, b, m)
	} else {
		err = unmarshalMessage[part03](v, b, m)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: unmarshal %s message: %w", v, err)
	}
	return m, nil
}

// MarshalTask encodes t as version v writes it.
func MarshalTask(v Version, t *Task) ([]byte, error) {
	if t == nil {
		return nil, fmt.Errorf("a2a: marshal %s task: nil task", v)
	}
	b, err := appendTask(nil, v, t)
	if err != nil {
		return nil, fmt.Errorf("a2a: marshal %s task: %w", v, err)
	}
	return b, nil
}

// UnmarshalTask decodes a task written in version v.
func UnmarshalTask(v Version, b []byte) (*Task, error) {
	t := new(Task)
	var err error
	if v == V10 {
		err = unmarshalTask[part10](v, b, t)
	} else {
		err = unmarshalTask[part03](v, b, t)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: unmarshal %s task: %w", v, err)
	}
	return t, nil
}

func unmarshalMessage[P wirePart](v Version, b []byte, m *Message) error {
	var w wireMessage[P]
	if err := unmarshalValue(b, &w); err != nil {
		return err
	}
	return asError(decodeMessage(decoder{v: v}, &w, m))
}

func unmarshalTask[P wirePart](v Version, b []byte, t *Task) error {
	var w wireTask[P]
	if err := unmarshalValue(b, &w); err != nil {
		return err
	}
	return asError(decodeTask(decoder{v: v}, &w, t))
}

// unmarshalValue decodes a standalone document: syntax errors stay as
// encoding/json reports them, type errors name the field.
func unmarshalValue(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return typeError(b, te)
	}
	return err
}

// asError returns e as an error, keeping a nil *Error nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
