package pbconv_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
)

// itemJSON is an upstream answer of about a kilobyte, shaped as the
// benchmark harness's /item: nested objects, an array, numbers, strings.
var itemJSON = func() []byte {
	var b strings.Builder
	b.WriteString(`{"id":1,"ref":"BENCH-ITEM-7F3A","name":"Benchmark catalogue item",` +
		`"description":"A fixed document the benchmark upstream answers for every request, about one kilobyte long.",` +
		`"tags":["bench","catalogue","fixed","json"],"variants":[`)
	for i, c := range []string{"black", "white", "red", "blue", "green", "grey", "navy", "olive", "sand", "teal"} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%04d-%s","color":%q,"size":"M","price":%g,"stock":%d}`,
			100+i, strings.ToUpper(c[:2]), c, 19.5+float64(i), 10*(i+1))
	}
	b.WriteString(`],"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	return []byte(b.String())
}()

// completedItemTask is the answer of a blocking SendMessage in the
// harness: the user's message in the history, the upstream's JSON answer
// (already encoded, as mapping keeps it) as the data artifact.
func completedItemTask() *a2a.Task {
	return &a2a.Task{ID: "019abcde-0000-7000-8000-000000000001", ContextID: "019abcde-0000-7000-8000-000000000002",
		Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)},
		Artifacts: []a2a.Artifact{{ArtifactID: "019abcde-0000-7000-8000-000000000003", Name: "item",
			Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(itemJSON)}}}},
		History: []a2a.Message{{MessageID: "m-0000000000000001", ContextID: "019abcde-0000-7000-8000-000000000002",
			TaskID: "019abcde-0000-7000-8000-000000000001", Role: a2a.RoleUser,
			Metadata: map[string]any{"skill": "item"}, Parts: []a2a.Part{a2a.DataPart(map[string]any{"id": 1.0})}}}}
}

// BenchmarkSendMessageResponse converts that answer to its proto and
// marshals it, as grpc-go's codec then does.
func BenchmarkSendMessageResponse(b *testing.B) {
	answer := &a2a.StreamResponse{Task: completedItemTask()}
	b.ReportAllocs()
	for b.Loop() {
		msg, err := pbconv.SendMessageResponse(answer)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSendMessage decodes the request the harness's gRPC
// client sends: one small data part, the skill named in metadata.
func BenchmarkDecodeSendMessage(b *testing.B) {
	data, _ := structpb.NewValue(map[string]any{"id": 1})
	meta, _ := structpb.NewStruct(map[string]any{"skill": "item"})
	in := &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: "m-0000000000000001", Role: a2apb.Role_ROLE_USER,
		Metadata: meta, Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pbconv.DecodeRequest(a2a.MethodSendMessage, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawData converts the upstream's kilobyte of JSON alone, and
// marshals it.
func BenchmarkRawData(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(itemJSON)))
	for b.Loop() {
		v, err := pbconv.RawValue(itemJSON)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
