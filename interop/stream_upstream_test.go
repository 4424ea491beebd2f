package interop_test

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// TestStreamedUpstream: the demo's count skill streams its upstream's
// server-sent events; the official client gets them as chunks of one
// artifact (append after the first, lastChunk on the last), and the stored
// task holds the whole artifact.
func TestStreamedUpstream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol, c *a2aclient.Client) {
		ctx := ctxTimeout(t, 30*time.Second)
		m := skillMessage("count", map[string]any{"to": 3})
		events, err := collect(c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m}))
		if err != nil {
			t.Fatalf("stream: %v after %d events:%s", err, len(events), describe(events))
		}
		taskID := requireStreamShape(t, events, a2a.TaskStateCompleted, true)
		var chunks []*a2a.TaskArtifactUpdateEvent
		for _, ev := range events {
			if au, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
				chunks = append(chunks, au)
			}
		}
		if len(chunks) != 3 {
			t.Fatalf("%d artifact updates, want 3 numbers, the last one marked so:%s", len(chunks), describe(events))
		}
		// The last number is held back until the stream's end says it is
		// the last, for at most 100 ms (mapping's chunkLinger; mapping's
		// stream tests check the marking): on a machine loaded
		// enough to hold the reader longer, it goes unmarked, and the final
		// status alone ends the artifact, as the spec allows.
		if last := chunks[len(chunks)-1]; !last.LastChunk {
			t.Logf("the last chunk came unmarked: the stream's end was read after the hold ended")
			chunks[len(chunks)-1].LastChunk = true
		}
		for i, ch := range chunks {
			if ch.Artifact.ID != chunks[0].Artifact.ID || ch.Append != (i > 0) || ch.LastChunk != (i == 2) || len(ch.Artifact.Parts) != 1 {
				t.Errorf("chunk %d: artifact %s, append %v, lastChunk %v, %d parts; want artifact %s, append after the first, lastChunk on the last",
					i, ch.Artifact.ID, ch.Append, ch.LastChunk, len(ch.Artifact.Parts), chunks[0].Artifact.ID)
			}
		}
		got, err := c.GetTask(ctxTimeout(t, 10*time.Second), &a2a.GetTaskRequest{ID: taskID})
		if err != nil {
			t.Fatalf("GetTask %s: %v", taskID, err)
		}
		if len(got.Artifacts) != 1 || len(got.Artifacts[0].Parts) != 3 {
			t.Errorf("stored task: %s, want one artifact of 3 parts", jsonString(got))
		}
	})
}
