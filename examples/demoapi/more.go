package demoapi

// The endpoints that show the mapping language's richer features: a binary
// download, a form body, a multipart upload and a flaky endpoint to retry.

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// maxFlakyKeys bounds the memory GET /flaky keeps: past it, it forgets.
const maxFlakyKeys = 10000

// avatar answers a user's avatar: a small PNG in a colour of their own.
func (a *API) avatar(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	u, ok := users[id]
	if !ok {
		writeError(w, http.StatusNotFound, "no such user")
		return
	}
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	c := color.RGBA{R: uint8(60 * u.ID), G: uint8(200 - 40*u.ID), B: 180, A: 255}
	for y := range 16 {
		for x := range 16 {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		writeError(w, http.StatusInternalServerError, "could not draw the avatar")
		return
	}
	writeFile(w, "user-"+id+".png", "image/png", buf.Bytes())
}

type feedbackEntry struct {
	ID      string `json:"id"`
	Rating  int    `json:"rating"`
	Comment string `json:"comment,omitempty"`
}

// feedback takes a form (application/x-www-form-urlencoded): rating 1 to 5
// and an optional comment.
func (a *API) feedback(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeError(w, http.StatusUnsupportedMediaType, "send a form (application/x-www-form-urlencoded)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "the form cannot be read")
		return
	}
	rating, err := strconv.Atoi(r.PostForm.Get("rating"))
	if err != nil || rating < 1 || rating > 5 {
		writeJSON(w, http.StatusUnprocessableEntity, validationError{Error: "validation failed",
			Fields: map[string]string{"rating": "must be an integer from 1 to 5"}})
		return
	}
	id := "fb-" + strconv.FormatInt(a.feedbackSeq.Add(1), 10)
	writeJSON(w, http.StatusCreated, feedbackEntry{ID: id, Rating: rating, Comment: r.PostForm.Get("comment")})
}

type documentEntry struct {
	ID        string `json:"id"`
	Title     string `json:"title,omitempty"`
	Filename  string `json:"filename"`
	MediaType string `json:"mediaType"`
	Size      int    `json:"size"`
}

// document takes a multipart/form-data upload: a file part "file" and an
// optional field "title".
func (a *API) document(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusUnsupportedMediaType, "send multipart/form-data")
		return
	}
	var doc documentEntry
	found := false
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "the multipart body cannot be read")
			return
		}
		data, err := io.ReadAll(p)
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		switch p.FormName() {
		case "file":
			found = true
			doc.Filename, doc.MediaType, doc.Size = p.FileName(), p.Header.Get("Content-Type"), len(data)
		case "title":
			doc.Title = strings.TrimSpace(string(data))
		}
	}
	if !found {
		writeJSON(w, http.StatusUnprocessableEntity, validationError{Error: "validation failed",
			Fields: map[string]string{"file": "is required"}})
		return
	}
	doc.ID = "doc-" + strconv.FormatInt(a.documentSeq.Add(1), 10)
	writeJSON(w, http.StatusCreated, doc)
}

// flakyHandler fails the first call for each key with 503, and answers the
// next ones: something for a client to retry.
func (a *API) flakyHandler(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	a.mu.Lock()
	if len(a.flaky) >= maxFlakyKeys {
		clear(a.flaky)
	}
	a.flaky[key]++
	n := a.flaky[key]
	a.mu.Unlock()
	if n == 1 {
		writeError(w, http.StatusServiceUnavailable, "temporarily unavailable, try again")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Key     string `json:"key"`
		Attempt int    `json:"attempt"`
		Message string `json:"message"`
	}{key, n, fmt.Sprintf("answered on attempt %d", n)})
}
