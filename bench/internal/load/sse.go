package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Stream is one Server-Sent Events response read over its own connection,
// with less client work than net/http's (one goroutine, no extra copies),
// so that thousands of them leave the machine to the server.
type Stream struct {
	c       *conn
	chunked bool
	pending []byte // body bytes read but not yet returned as lines
}

// OpenStream sends req (a complete HTTP/1.1 request) to addr and reads the
// answer's head; the answer must be 200 with Content-Type
// text/event-stream.
func OpenStream(addr string, req []byte) (*Stream, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	if _, err := c.c.Write(req); err != nil {
		c.close()
		return nil, err
	}
	h, err := c.readHead()
	if err != nil {
		c.close()
		return nil, err
	}
	if h.status != 200 || h.contentType != "text/event-stream" {
		c.body = c.body[:0]
		if h.length > 0 && h.length < 4096 {
			c.readN(h.length)
		}
		c.close()
		return nil, fmt.Errorf("answered %d (%s), not an event stream: %s", h.status, h.contentType, snippet(c.body))
	}
	return &Stream{c: c, chunked: h.chunked}, nil
}

// Data returns the payload of the next "data:" line, valid until the next
// call. It skips comments, blank lines and other fields. At the end of the
// stream it returns io.EOF.
func (s *Stream) Data() ([]byte, error) {
	for {
		line, err := s.line()
		if err != nil {
			return nil, err
		}
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			return bytes.TrimPrefix(rest, []byte(" ")), nil
		}
	}
}

// line returns the next line of the body without its line ending.
func (s *Stream) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(s.pending, '\n'); i >= 0 {
			line := s.pending[:i]
			s.pending = s.pending[i+1:]
			return bytes.TrimSuffix(line, []byte("\r")), nil
		}
		if !s.chunked { // a stream without chunking runs to the end of the connection
			line, err := s.c.r.ReadSlice('\n')
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil, io.EOF
			}
			if err != nil {
				return nil, err
			}
			return bytes.TrimRight(line, "\r\n"), nil
		}
		// Keep the unread tail, then append the next chunk after it.
		s.c.body = append(s.c.body[:0], s.pending...)
		more, err := s.c.readChunk()
		if err != nil {
			return nil, err
		}
		if !more {
			return nil, io.EOF
		}
		s.pending = s.c.body
	}
}

// Close closes the stream's connection.
func (s *Stream) Close() { s.c.close() }

// Hold sends req (a complete HTTP/1.1 request) on a new connection, calls
// sent once it is written, then waits for the answer, which must be 200 and
// hold expect, records in *answered when it was read, calls settled, and
// keeps the connection until hold is closed.
func Hold(addr string, req []byte, sent, settled func(), answered *time.Time, expect []byte, hold <-chan struct{}) error {
	c, err := dial(addr)
	if err != nil {
		sent()
		return err
	}
	defer c.close()
	_, err = c.c.Write(req)
	sent()
	if err != nil {
		return err
	}
	status, body, _, err := c.readResponse()
	if err != nil {
		return err
	}
	*answered = time.Now()
	if status != 200 || !bytes.Contains(body, expect) {
		return fmt.Errorf("HTTP %d: %s", status, snippet(body))
	}
	settled()
	<-hold
	return nil
}
