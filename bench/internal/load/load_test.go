package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 5000 * time.Microsecond},
		{0.9, 9000 * time.Microsecond},
		{0.99, 9900 * time.Microsecond},
		{1, 10000 * time.Microsecond},
	} {
		got := h.Quantile(tc.q)
		if got < tc.want || float64(got-tc.want) > float64(tc.want)/100 {
			t.Errorf("Quantile(%v) = %v, want %v (at most 1%% above)", tc.q, got, tc.want)
		}
	}
	if h.Count() != 10000 || h.Max() != 10*time.Millisecond {
		t.Errorf("Count, Max = %d, %v; want 10000, 10ms", h.Count(), h.Max())
	}
	var merged Histogram
	merged.Merge(&h)
	merged.Merge(&h)
	if merged.Count() != 20000 || merged.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merging a histogram with itself: count %d, p50 %v; want 20000, %v", merged.Count(), merged.Quantile(0.5), h.Quantile(0.5))
	}
	if (&Histogram{}).Quantile(0.5) != 0 {
		t.Error("an empty histogram's quantile is not 0")
	}
}

func TestBucketsNeverUnderstate(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1<<40 + 12345} {
		got := bucketValue(bucketOf(v))
		if got < v || float64(got-v) > float64(v)/128+1 {
			t.Errorf("value %d lands in a bucket reported as %d", v, got)
		}
	}
}

// server answers GET /cl with a Content-Length body, /chunked in two
// flushed chunks, /close with a body and Connection: close, and /bad with
// a 500.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/cl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "11")
		io.WriteString(w, "hello MARK!")
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part, ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "then MARK")
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "MARK, bye")
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "MARK but broken", http.StatusInternalServerError)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	srv := server(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		path       string
		expect     string
		wantErrors bool
	}{
		{"/cl", "MARK", false},
		{"/chunked", "first part, then MARK", false},
		{"/close", "MARK", false},
		{"/cl", "absent", true},
		{"/bad", "MARK", true},
	} {
		t.Run(fmt.Sprintf("%s %s", tc.path, tc.expect), func(t *testing.T) {
			target := Target{Addr: addr, Request: NewRequest("GET", addr, tc.path, nil), Expect: [][]byte{[]byte(tc.expect)}}
			res, err := Run(context.Background(), target, Options{Conns: 4, Count: 200})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK+res.Errors != 200 {
				t.Errorf("OK %d + errors %d, want 200 requests", res.OK, res.Errors)
			}
			if tc.wantErrors {
				if res.OK != 0 || res.FirstError == "" {
					t.Errorf("OK %d, first error %q; want every answer to be an error", res.OK, res.FirstError)
				}
				return
			}
			if res.Errors != 0 || res.Latency.Count() != 200 {
				t.Errorf("errors %d (%s), latencies %d; want 0 errors, 200 latencies", res.Errors, res.FirstError, res.Latency.Count())
			}
		})
	}
}

func TestRunAtRate(t *testing.T) {
	srv := server(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	target := Target{Addr: addr, Request: NewRequest("GET", addr, "/cl", nil)}
	res, err := Run(context.Background(), target, Options{Conns: 4, Duration: 500 * time.Millisecond, Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	// 200 per second for half a second: about 100, whatever the server could do.
	if res.OK < 80 || res.OK > 110 || res.Errors != 0 {
		t.Errorf("OK %d, errors %d at 200/s for 0.5s; want about 100 and no errors", res.OK, res.Errors)
	}
}

func TestStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, ": hello\n\ndata: {\"n\":1}\n\n")
		f.Flush()
		io.WriteString(w, "data: {\"n\":")
		f.Flush() // an event split across chunks
		io.WriteString(w, "2}\n\nevent: x\ndata:{\"n\":3}\r\n\r\n")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	s, err := OpenStream(addr, NewRequest("GET", addr, "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		got, err := s.Data()
		if err != nil || string(got) != want {
			t.Fatalf("Data() = %q, %v; want %q", got, err, want)
		}
	}
	if got, err := s.Data(); err != io.EOF {
		t.Errorf("Data() at the end = %q, %v; want io.EOF", got, err)
	}
}

func TestOpenStreamRefusesOtherAnswers(t *testing.T) {
	srv := server(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	if _, err := OpenStream(addr, NewRequest("GET", addr, "/bad", nil)); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("OpenStream on a 500 answer: %v; want an error naming the status", err)
	}
}
