package demoapi_test

import (
	"bytes"
	"image/png"
	"mime/multipart"
	"testing"
)

func TestAvatar(t *testing.T) {
	_, srv := newServer(t)
	resp, body := send(t, srv, call{path: "/users/2/avatar"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("Content-Disposition") != `inline; filename=user-2.png` {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil || img.Bounds().Dx() != 16 {
		t.Fatalf("not a 16×16 PNG: %v", err)
	}
	if a := do(t, srv, call{path: "/users/9/avatar"}); a.status != 404 {
		t.Errorf("unknown user: %d", a.status)
	}
	if a := do(t, srv, call{path: "/users/1/avatar", noKey: true}); a.status != 401 {
		t.Errorf("without the key: %d", a.status)
	}
}

func TestFeedback(t *testing.T) {
	_, srv := newServer(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	tests := []struct {
		c      call
		status int
		body   string
	}{
		{call{method: "POST", path: "/feedback", body: "rating=5&comment=great+stuff", header: form}, 201,
			`{"id":"fb-1","rating":5,"comment":"great stuff"}`},
		{call{method: "POST", path: "/feedback", body: "rating=9", header: form}, 422,
			`{"error":"validation failed","fields":{"rating":"must be an integer from 1 to 5"}}`},
		{call{method: "POST", path: "/feedback", body: `{"rating":5}`, header: map[string]string{"Content-Type": "application/json"}}, 415,
			`{"error":"send a form (application/x-www-form-urlencoded)"}`},
	}
	for _, tt := range tests {
		if a := do(t, srv, tt.c); a.status != tt.status || a.raw != tt.body {
			t.Errorf("%s: %d %s; want %d %s", tt.c.body, a.status, a.raw, tt.status, tt.body)
		}
	}
}

func TestDocuments(t *testing.T) {
	_, srv := newServer(t)
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	w.WriteField("title", " Notes ")
	h := map[string][]string{"Content-Disposition": {`form-data; name="file"; filename="notes.txt"`}, "Content-Type": {"text/plain"}}
	pw, _ := w.CreatePart(h)
	pw.Write([]byte("hello"))
	w.Close()
	a := do(t, srv, call{method: "POST", path: "/documents", body: buf.String(), header: map[string]string{"Content-Type": w.FormDataContentType()}})
	if a.status != 201 || a.raw != `{"id":"doc-1","title":"Notes","filename":"notes.txt","mediaType":"text/plain","size":5}` {
		t.Errorf("%d %s", a.status, a.raw)
	}

	buf.Reset()
	w = multipart.NewWriter(&buf)
	w.WriteField("title", "no file")
	w.Close()
	a = do(t, srv, call{method: "POST", path: "/documents", body: buf.String(), header: map[string]string{"Content-Type": w.FormDataContentType()}})
	if a.status != 422 || a.raw != `{"error":"validation failed","fields":{"file":"is required"}}` {
		t.Errorf("no file: %d %s", a.status, a.raw)
	}
	if a := do(t, srv, call{method: "POST", path: "/documents", body: "{}"}); a.status != 415 {
		t.Errorf("not multipart: %d %s", a.status, a.raw)
	}
}

func TestFlakyFailsOncePerKey(t *testing.T) {
	_, srv := newServer(t)
	for i, want := range []struct {
		path   string
		status int
	}{{"/flaky/a", 503}, {"/flaky/a", 200}, {"/flaky/a", 200}, {"/flaky/b", 503}} {
		if a := do(t, srv, call{path: want.path}); a.status != want.status {
			t.Errorf("call %d to %s: %d, want %d", i+1, want.path, a.status, want.status)
		}
	}
}

func TestOrderForACustomer(t *testing.T) {
	_, srv := newServer(t)
	a := do(t, srv, call{method: "POST", path: "/orders", body: `{"item":"tea","quantity":1,"customer":"ada@example.com"}`})
	if a.status != 201 || a.raw != `{"id":"ord-1","item":"tea","quantity":1,"customer":"ada@example.com","status":"placed"}` {
		t.Errorf("%d %s", a.status, a.raw)
	}
}
