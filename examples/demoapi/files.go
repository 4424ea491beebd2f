package demoapi

// A few small files of fixed content, each with its media type: what an
// MCP client gets as image, audio, text or an embedded resource (and what
// the MCP conformance suite's tools answer, examples/mcp-conformance.yaml).

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"mime"
	"net/http"
	"strconv"
)

type file struct {
	mediaType string
	body      []byte
}

// files are served by GET /files/{name}.
var files = map[string]file{
	"pixel.png":   {"image/png", redPixel()},
	"tone.wav":    {"audio/wav", tone()},
	"notes.txt":   {"text/plain; charset=utf-8", []byte("Meeting notes: the API is now an A2A agent and an MCP server.\n")},
	"sample.json": {"application/json", []byte(`{"test":"data","value":123}`)},
}

// redPixel is a 1×1 red PNG.
func redPixel() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("demoapi: encoding a 1×1 PNG: " + err.Error())
	}
	return buf.Bytes()
}

// tone is a tenth of a second of a 400 Hz square wave: a WAV file of 8-bit
// mono PCM at 8 kHz.
func tone() []byte {
	const rate, samples = 8000, 800
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	le(uint32(16))   // the fmt chunk's size
	le(uint16(1))    // PCM
	le(uint16(1))    // mono
	le(uint32(rate)) // samples a second
	le(uint32(rate)) // bytes a second
	le(uint16(1))    // bytes a frame
	le(uint16(8))    // bits a sample
	b.WriteString("data")
	le(uint32(samples))
	for i := range samples {
		if i/10%2 == 0 { // 10 samples high, 10 low: 400 Hz
			b.WriteByte(0xc0)
		} else {
			b.WriteByte(0x40)
		}
	}
	return b.Bytes()
}

// fileHandler answers one of the files, inline with its name.
func (a *API) fileHandler(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	f, ok := files[name]
	if !ok {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	writeFile(w, name, f.mediaType, f.body)
}

// writeFile answers body as a file shown inline, with its name.
func writeFile(w http.ResponseWriter, name, mediaType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", mediaType)
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
