package a2a

import "fmt"

// The standalone message codec, for the tests (package a2a_test) that read
// messages back: the server never decodes a message on its own.

// MarshalMessage encodes m as version v writes it.
func MarshalMessage(v Version, m *Message) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("a2a: marshal %s message: nil message", v)
	}
	b, err := appendMessage(nil, form(v), m)
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

func unmarshalMessage[P wirePart](v Version, b []byte, m *Message) error {
	var w wireMessage[P]
	if err := unmarshalValue(b, &w); err != nil {
		return err
	}
	return asError(decodeMessage(decoder{v: v}, &w, m))
}
