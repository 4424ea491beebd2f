package demoapi_test

import (
	"io"
	"net/http"
	"testing"
)

// A report is a job: started with 202 and its Location, polled until it is
// done, and gone once deleted.
func TestReportJob(t *testing.T) {
	_, srv := newServer(t)
	started := do(t, srv, call{method: "POST", path: "/reports"})
	loc := started.header.Get("Location")
	if started.status != http.StatusAccepted || loc != "/reports/1" {
		t.Fatalf("POST /reports: %d, Location %q; want 202 and /reports/1", started.status, loc)
	}
	for i, want := range []int{202, 202, 200, 200} {
		if got := do(t, srv, call{path: loc}); got.status != want {
			t.Errorf("poll %d: %d %s, want %d", i+1, got.status, got.raw, want)
		}
	}
	if got := do(t, srv, call{method: "DELETE", path: loc}); got.status != http.StatusOK {
		t.Errorf("DELETE: %d, want 200", got.status)
	}
	for _, c := range []call{{path: loc}, {method: "DELETE", path: loc}} {
		if got := do(t, srv, c); got.status != http.StatusNotFound {
			t.Errorf("%s after DELETE: %d, want 404", c.method, got.status)
		}
	}
	if got := do(t, srv, call{method: "PUT", path: loc}); got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET, HEAD, DELETE" {
		t.Errorf("PUT: %d, Allow %q", got.status, got.header.Get("Allow"))
	}
}

func TestCount(t *testing.T) {
	_, srv := newServer(t)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/count?to=3", nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	want := "data: {\"n\": 1}\n\ndata: {\"n\": 2}\n\ndata: {\"n\": 3}\n\ndata: [DONE]\n\n"
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || string(body) != want {
		t.Errorf("GET /count?to=3: %d %q %q (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
	}
	for _, to := range []string{"0", "101", "x"} {
		if got := do(t, srv, call{path: "/count?to=" + to}); got.status != http.StatusBadRequest {
			t.Errorf("to=%s: %d, want 400", to, got.status)
		}
	}
}
