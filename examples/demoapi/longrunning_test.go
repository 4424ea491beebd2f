package demoapi_test

import (
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
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

// ?steps=N makes a job that answers N polls with 202, each further on,
// before the report; a bad N is refused.
func TestReportJobSteps(t *testing.T) {
	_, srv := newServer(t)
	tests := []struct {
		steps    string
		percents []int // of the polls answered 202, in order
	}{
		{"", []int{0, 50}},
		{"1", []int{0}},
		{"3", []int{0, 34, 68}},
		{"4", []int{0, 25, 50, 75}},
	}
	for _, tt := range tests {
		started := do(t, srv, call{method: "POST", path: "/reports?steps=" + tt.steps})
		if started.status != http.StatusAccepted {
			t.Fatalf("steps=%s: POST: %d %s", tt.steps, started.status, started.raw)
		}
		loc := started.header.Get("Location")
		var percents []int
		for range 2 * demoapi.MaxReportSteps {
			got := do(t, srv, call{path: loc})
			if got.status != http.StatusAccepted {
				if got.status != http.StatusOK {
					t.Errorf("steps=%s: poll: %d %s", tt.steps, got.status, got.raw)
				}
				break
			}
			percents = append(percents, int(got.body["percent"].(float64)))
		}
		if !slices.Equal(percents, tt.percents) {
			t.Errorf("steps=%s: the polls said %v percent, want %v", tt.steps, percents, tt.percents)
		}
	}
	for _, steps := range []string{"0", "101", "x"} {
		if got := do(t, srv, call{method: "POST", path: "/reports?steps=" + steps}); got.status != http.StatusBadRequest {
			t.Errorf("steps=%s: %d %s, want 400", steps, got.status, got.raw)
		}
	}
}
