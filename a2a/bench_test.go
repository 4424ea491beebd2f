package a2a_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// A typical SendMessage: one text part and one small data part, the skill
// named in metadata, as the official SDKs send it.
var sendMessageBodies = map[a2a.Version]string{
	a2a.V10: `{"jsonrpc":"2.0","id":"b6a1c5d0-5c1e-4a43-9d43-2f7f3b1b9e10","method":"SendMessage","params":{` +
		`"message":{"messageId":"9229e770-767c-417b-a0b0-f0741243c589","role":"ROLE_USER",` +
		`"parts":[{"text":"What is the weather in Paris?"},{"data":{"city":"Paris","units":"metric"}}],` +
		`"metadata":{"skill":"weather"}},` +
		`"configuration":{"acceptedOutputModes":["application/json","text/plain"]}}}`,
	a2a.V03: `{"jsonrpc":"2.0","id":"b6a1c5d0-5c1e-4a43-9d43-2f7f3b1b9e10","method":"message/send","params":{` +
		`"message":{"kind":"message","messageId":"9229e770-767c-417b-a0b0-f0741243c589","role":"user",` +
		`"parts":[{"kind":"text","text":"What is the weather in Paris?"},{"kind":"data","data":{"city":"Paris","units":"metric"}}],` +
		`"metadata":{"skill":"weather"}},` +
		`"configuration":{"acceptedOutputModes":["application/json","text/plain"],"blocking":true}}}`,
}

func BenchmarkDecodeSendMessage(b *testing.B) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		body := []byte(sendMessageBodies[v])
		b.Run(v.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := a2a.DecodeRequest(v, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The SendMessage answer: a completed task with one data artifact, written
// into a reused buffer. "raw" holds the artifact's data as the upstream's
// already-encoded JSON; "map" as a decoded object, whose keys get sorted.
func BenchmarkEncodeCompletedTask(b *testing.B) {
	id := json.RawMessage(`"b6a1c5d0-5c1e-4a43-9d43-2f7f3b1b9e10"`)
	for _, data := range []string{"map", "raw"} {
		task := completedTask()
		if data == "raw" {
			task.Artifacts[0].Parts[0].Data = json.RawMessage(`{"city":"Paris","tempC":21.5,"sunny":true}`)
		}
		result := &a2a.StreamResponse{Task: task}
		for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
			b.Run(v.String()+"/"+data, func(b *testing.B) {
				b.ReportAllocs()
				buf := make([]byte, 0, 1024)
				for b.Loop() {
					var err error
					if buf, err = a2a.AppendResult(buf[:0], v, id, result); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(len(buf)))
			})
		}
	}
}

func BenchmarkAppendError(b *testing.B) {
	e := a2a.InvalidParams("params.message.parts", "at least one part is required")
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = a2a.AppendError(buf[:0], a2a.V10, json.RawMessage("1"), e)
	}
}

// Bodies shaped to cost the most per byte, at a megabyte: a string of
// escapes, and an object of many members (each checked against the others
// for duplicates). Their MB/s should be of the order of a typical body's,
// not fall as the body grows.
func BenchmarkDecodeHostile(b *testing.B) {
	wrap := func(data string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":` + data + `}]}}}`)
	}
	var members strings.Builder
	members.WriteString("{")
	for i := range 80_000 {
		fmt.Fprintf(&members, `"%x":0,`, i)
	}
	members.WriteString(`"end":0}`)
	for name, body := range map[string][]byte{
		"escapes": wrap(`"` + strings.Repeat(`\n`, 512<<10) + `"`),
		"members": wrap(members.String()),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := a2a.DecodeRequest(a2a.V10, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
