package a2a

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Round trips over the specifications' examples (see testdata/README.md):
// decode, encode, compare as JSON values.

func TestRoundTripV10(t *testing.T) {
	files, _ := filepath.Glob("testdata/v1.0/*.json")
	if len(files) == 0 {
		t.Fatal("no test data")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if strings.HasPrefix(name, "card-") {
			continue // TestRoundTripCards (card_test.go)
		}
		t.Run(name, func(t *testing.T) {
			doc := readFile(t, file)
			switch {
			case strings.HasPrefix(name, "request-"):
				body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + string(doc) + `}`
				roundTripRequest(t, V10, []byte(body))
			case strings.HasPrefix(name, "list-tasks-"):
				var w struct {
					Tasks         []wireTask[part10] `json:"tasks"`
					NextPageToken string             `json:"nextPageToken"`
					PageSize      int32              `json:"pageSize"`
					TotalSize     int32              `json:"totalSize"`
				}
				if err := json.Unmarshal(doc, &w); err != nil {
					t.Fatal(err)
				}
				r := &ListTasksResponse{NextPageToken: w.NextPageToken, PageSize: w.PageSize, TotalSize: w.TotalSize}
				r.Tasks = make([]Task, len(w.Tasks))
				for i := range w.Tasks {
					if err := decodeTask(decoder{v: V10}, &w.Tasks[i], &r.Tasks[i]); err != nil {
						t.Fatal(err)
					}
				}
				roundTripResult(t, V10, []byte(`{"jsonrpc":"2.0","id":1,"result":`+string(doc)+`}`), r)
			default: // a SendMessage result or a stream event
				sr, err := decodeStreamResponse(V10, doc)
				if err != nil {
					t.Fatal(err)
				}
				roundTripResult(t, V10, []byte(`{"jsonrpc":"2.0","id":1,"result":`+string(doc)+`}`), sr)
			}
		})
	}
}

func TestRoundTripV03(t *testing.T) {
	files, _ := filepath.Glob("testdata/v0.3/*.json")
	if len(files) == 0 {
		t.Fatal("no test data")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if strings.HasSuffix(name, "-invalid") || strings.Contains(name, "-invalid-") {
			continue // error tests (decode_test.go)
		}
		if strings.HasPrefix(name, "card-") {
			continue // TestRoundTripCards (card_test.go)
		}
		t.Run(name, func(t *testing.T) {
			doc := readFile(t, file)
			var env struct {
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(doc, &env); err != nil {
				t.Fatal(err)
			}
			if env.Method != "" {
				roundTripRequest(t, V03, doc)
				return
			}
			sr, err := decodeStreamResponse(V03, env.Result)
			if err != nil {
				t.Fatal(err)
			}
			roundTripResult(t, V03, doc, sr)
		})
	}
}

// roundTripRequest decodes a request and, when it carries a message,
// checks the message encodes back to what was sent.
func roundTripRequest(t *testing.T, v Version, body []byte) {
	t.Helper()
	req, e := DecodeRequest(v, body)
	if e != nil {
		t.Fatalf("DecodeRequest: %v", e)
	}
	smr, ok := req.Params.(*SendMessageRequest)
	if !ok {
		return
	}
	var env struct {
		Params struct {
			Message json.RawMessage `json:"message"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	got, err := MarshalMessage(v, &smr.Message)
	if err != nil {
		t.Fatal(err)
	}
	want := env.Params.Message
	if v == V03 && !bytes.Contains(want, []byte(`"kind": "message"`)) {
		// The examples' requests leave out the message's kind, which the
		// decoder accepts and the encoder writes.
		var m map[string]any
		mustUnmarshal(t, want, &m)
		m["kind"] = "message"
		want, _ = json.Marshal(m)
	}
	assertSameJSON(t, want, got)
}

// roundTripResult encodes result as the answer to request id 1 (or the
// envelope's id) and compares with the example envelope.
func roundTripResult(t *testing.T, v Version, envelope []byte, result any) {
	t.Helper()
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(envelope, &env); err != nil {
		t.Fatal(err)
	}
	got, err := AppendResult(nil, v, env.ID, result)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(got, "\n\r") {
		t.Errorf("output spans lines: %s", got)
	}
	assertSameJSON(t, envelope, got)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
}

func assertSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	mustUnmarshal(t, want, &w)
	mustUnmarshal(t, got, &g)
	if !reflect.DeepEqual(normalize("", w), normalize("", g)) {
		wi, _ := json.MarshalIndent(normalize("", w), "", "  ")
		gi, _ := json.MarshalIndent(normalize("", g), "", "  ")
		t.Errorf("JSON differs\nwant %s\ngot  %s", wi, gi)
	}
}

// NormalizeJSON serves the round trip of the example cards, an external
// test (card_test.go) because it reads cards back with a2atest, which
// imports this package.
var NormalizeJSON = normalize

// normalize reads timestamps at millisecond precision and drops "" and
// false, which the encoder and the examples may write or leave out.
func normalize(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if n := normalize(k, e); n != "" && n != false {
				out[k] = n
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize("", e)
		}
		return out
	case string:
		if key == "timestamp" {
			if ts, ok := parseTime(v); ok {
				return ts.Truncate(time.Millisecond).Format(timeLayout)
			}
		}
	}
	return v
}

// decodeStreamResponse reads a SendMessage result or stream event: the
// server only writes these, so this decoder lives with the tests.
func decodeStreamResponse(v Version, b []byte) (*StreamResponse, error) {
	if v == V10 {
		var w struct {
			Task           *wireTask[part10]           `json:"task"`
			Message        *wireMessage[part10]        `json:"message"`
			StatusUpdate   *wireStatusUpdate[part10]   `json:"statusUpdate"`
			ArtifactUpdate *wireArtifactUpdate[part10] `json:"artifactUpdate"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return streamResponse(decoder{v: v}, w.Task, w.Message, w.StatusUpdate, w.ArtifactUpdate)
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &kind); err != nil {
		return nil, err
	}
	var (
		task *wireTask[part03]
		msg  *wireMessage[part03]
		su   *wireStatusUpdate[part03]
		au   *wireArtifactUpdate[part03]
		dst  any
	)
	switch kind.Kind {
	case "task":
		task = new(wireTask[part03])
		dst = task
	case "message":
		msg = new(wireMessage[part03])
		dst = msg
	case "status-update":
		su = new(wireStatusUpdate[part03])
		dst = su
	case "artifact-update":
		au = new(wireArtifactUpdate[part03])
		dst = au
	default:
		return nil, &Error{Message: "unknown kind " + kind.Kind}
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return nil, err
	}
	return streamResponse(decoder{v: v}, task, msg, su, au)
}

type wireStatusUpdate[P wirePart] struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    wireStatus[P]  `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata"`
}

type wireArtifactUpdate[P wirePart] struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  wireArtifact[P] `json:"artifact"`
	Append    bool            `json:"append"`
	LastChunk bool            `json:"lastChunk"`
	Metadata  map[string]any  `json:"metadata"`
}

func streamResponse[P wirePart](d decoder, task *wireTask[P], msg *wireMessage[P], su *wireStatusUpdate[P], au *wireArtifactUpdate[P]) (*StreamResponse, error) {
	r := &StreamResponse{}
	var err *Error
	switch {
	case task != nil:
		r.Task = new(Task)
		err = decodeTask(d, task, r.Task)
	case msg != nil:
		r.Message = new(Message)
		err = decodeMessage(d, msg, r.Message)
	case su != nil:
		r.StatusUpdate = &TaskStatusUpdateEvent{TaskID: su.TaskID, ContextID: su.ContextID, Final: su.Final, Metadata: su.Metadata}
		err = decodeStatus(d, &su.Status, &r.StatusUpdate.Status)
	case au != nil:
		r.ArtifactUpdate = &TaskArtifactUpdateEvent{TaskID: au.TaskID, ContextID: au.ContextID, Append: au.Append, LastChunk: au.LastChunk, Metadata: au.Metadata}
		err = decodeArtifact(&au.Artifact, &r.ArtifactUpdate.Artifact)
	default:
		return nil, &Error{Message: "empty stream response"}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}
