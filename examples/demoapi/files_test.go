package demoapi_test

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"net/http"
	"testing"
)

// Each file comes with its media type and name, and is what it says it is.
func TestFiles(t *testing.T) {
	_, srv := newServer(t)
	tests := []struct {
		name, mediaType string
		check           func(body []byte) string // what is wrong, "" if nothing
	}{
		{"pixel.png", "image/png", func(b []byte) string {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() != 1 || img.Bounds().Dy() != 1 {
				return "not a 1×1 PNG"
			}
			if r, g, _, _ := img.At(0, 0).RGBA(); r != 0xffff || g != 0 {
				return "not red"
			}
			return ""
		}},
		{"tone.wav", "audio/wav", func(b []byte) string {
			if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " || string(b[36:40]) != "data" {
				return "no RIFF WAVE header"
			}
			if riff, data := binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[40:]); int(riff) != len(b)-8 || int(data) != len(b)-44 {
				return "sizes in the header do not match the file"
			}
			return ""
		}},
		{"notes.txt", "text/plain; charset=utf-8", func(b []byte) string {
			if len(b) == 0 {
				return "empty"
			}
			return ""
		}},
		{"sample.json", "application/json", func(b []byte) string {
			if string(b) != `{"test":"data","value":123}` {
				return "not the sample document"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		resp, body := send(t, srv, call{path: "/files/" + tt.name})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.mediaType ||
			resp.Header.Get("Content-Disposition") != "inline; filename="+tt.name {
			t.Errorf("%s: %d %v", tt.name, resp.StatusCode, resp.Header)
		}
		if problem := tt.check(body); problem != "" {
			t.Errorf("%s: %s (%d bytes)", tt.name, problem, len(body))
		}
	}
	if a := do(t, srv, call{path: "/files/secret.txt"}); a.status != http.StatusNotFound {
		t.Errorf("unknown file: %d", a.status)
	}
	if a := do(t, srv, call{path: "/files/pixel.png", noKey: true}); a.status != http.StatusUnauthorized {
		t.Errorf("without the key: %d", a.status)
	}
}
