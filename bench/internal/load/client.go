package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection that sends a prebuilt request
// and reads the answer: a few hundred nanoseconds of client work, so that on
// a small machine the load generator takes as little CPU from the
// contenders as it can.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	body []byte // the last answer's body, reused
	req  []byte // its own copy of the request, when Target.Prepare changes it
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 32<<10)}, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// roundTrip sends req (a complete HTTP/1.1 request) and reads the answer.
// After an error the connection is unusable. keep is false when the server
// asked to close the connection.
func (c *conn) roundTrip(req []byte) (status int, body []byte, keep bool, err error) {
	if _, err = c.c.Write(req); err != nil {
		return 0, nil, false, err
	}
	return c.readResponse()
}

func (c *conn) readResponse() (status int, body []byte, keep bool, err error) {
	h, err := c.readHead()
	if err != nil {
		return 0, nil, false, err
	}
	c.body = c.body[:0]
	keep = h.keep
	switch {
	case h.status/100 == 1 || h.status == 204 || h.status == 304:
	case h.chunked:
		err = c.readChunked()
	case h.length >= 0:
		err = c.readN(h.length)
	default: // the body runs to the end of the connection
		c.body, err = appendAll(c.body, c.r)
		keep = false
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("reading the body: %w", err)
	}
	return h.status, c.body, keep, nil
}

// head is what the benchmark needs of a response's status line and headers.
type head struct {
	status      int
	length      int64 // -1 when not given
	chunked     bool
	keep        bool
	contentType string
}

func (c *conn) readHead() (head, error) {
	line, err := c.readLine()
	if err != nil {
		return head{}, fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return head{}, fmt.Errorf("not an HTTP/1.x status line: %q", line)
	}
	h := head{length: -1, keep: line[7] == '1'} // HTTP/1.1 keeps the connection unless told otherwise
	if h.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return head{}, fmt.Errorf("bad status code in %q", line)
	}
	for {
		line, err = c.readLine()
		if err != nil {
			return head{}, fmt.Errorf("reading headers: %w", err)
		}
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return head{}, fmt.Errorf("malformed header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			if h.length, err = strconv.ParseInt(string(value), 10, 64); err != nil || h.length < 0 {
				return head{}, fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "transfer-encoding"):
			h.chunked = bytes.EqualFold(value, []byte("chunked"))
		case asciiEqualFold(name, "connection"):
			if bytes.EqualFold(value, []byte("close")) {
				h.keep = false
			}
		case asciiEqualFold(name, "content-type"):
			h.contentType = string(value)
		}
	}
}

// readLine returns one line without its CR LF, valid until the next read.
func (c *conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func (c *conn) readN(n int64) error {
	start := len(c.body)
	c.body = grow(c.body, int(n))
	_, err := io.ReadFull(c.r, c.body[start:start+int(n)])
	return err
}

func (c *conn) readChunked() error {
	for {
		more, err := c.readChunk()
		if err != nil || !more {
			return err
		}
	}
}

// readChunk appends one chunk of a chunked body to c.body; after the last
// (empty) chunk and the trailers it returns false.
func (c *conn) readChunk() (more bool, err error) {
	line, err := c.readLine()
	if err != nil {
		return false, err
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
	if err != nil || size < 0 {
		return false, fmt.Errorf("bad chunk size %q", line)
	}
	if size == 0 {
		for { // trailers, up to the empty line
			line, err := c.readLine()
			if err != nil {
				return false, err
			}
			if len(line) == 0 {
				return false, nil
			}
		}
	}
	if err := c.readN(size); err != nil {
		return false, err
	}
	if line, err := c.readLine(); err != nil || len(line) != 0 {
		return false, errors.Join(errors.New("chunk not followed by CRLF"), err)
	}
	return true, nil
}

func grow(b []byte, n int) []byte {
	if need := len(b) + n; need > cap(b) {
		nb := make([]byte, len(b), max(need, 2*cap(b)))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func appendAll(b []byte, r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
