package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// userMessage is a user message in version's wire form with a text part
// and, when data is not nil, a data part; skill and taskID are left out
// when empty.
func userMessage(version, skill, taskID, text string, data map[string]any) map[string]any {
	m := map[string]any{"messageId": fmt.Sprintf("msg-%d", time.Now().UnixNano())}
	if skill != "" {
		m["metadata"] = map[string]any{"skill": skill}
	}
	if taskID != "" {
		m["taskId"] = taskID
	}
	var parts []any
	if version == "1.0" {
		m["role"] = "ROLE_USER"
		if text != "" {
			parts = append(parts, map[string]any{"text": text})
		}
		if data != nil {
			parts = append(parts, map[string]any{"data": data})
		}
	} else {
		m["kind"], m["role"] = "message", "user"
		if text != "" {
			parts = append(parts, map[string]any{"kind": "text", "text": text})
		}
		if data != nil {
			parts = append(parts, map[string]any{"kind": "data", "data": data})
		}
	}
	m["parts"] = parts
	return m
}

// requireQuestion checks that a task asks for the city: input-required,
// with a text that names it and a data part holding its schema.
func requireQuestion(t *testing.T, version string, task map[string]any) {
	t.Helper()
	if got := stateOf(task); got != wireState(version, a2a.TaskStateInputRequired) {
		t.Fatalf("state %q, want input-required: %v", got, task)
	}
	parts := statusParts(task)
	if len(parts) != 2 {
		t.Fatalf("status message parts %v: want a text and a data part", parts)
	}
	if text, _ := parts[0]["text"].(string); !strings.Contains(text, "city") {
		t.Errorf("the question %q does not name the missing argument", text)
	}
	schema, _ := json.Marshal(parts[1]["data"])
	if !strings.Contains(string(schema), `"required":["city"]`) || !strings.Contains(string(schema), `"city":{`) {
		t.Errorf("the data part %s does not list the missing argument's schema", schema)
	}
}

// requireWeather checks that a task completed with the weather of city.
func requireWeather(t *testing.T, version string, task map[string]any, city string) {
	t.Helper()
	if got := stateOf(task); got != wireState(version, a2a.TaskStateCompleted) {
		t.Fatalf("state %q, want completed: %v", got, task)
	}
	artifacts, _ := task["artifacts"].([]any)
	if b, _ := json.Marshal(artifacts); len(artifacts) != 1 || !strings.Contains(string(b), `"city":"`+city+`"`) {
		t.Errorf("artifacts %s: want the weather of %s", b, city)
	}
}

// TestMultiTurnBlocking: a message without the required city leaves the
// task input-required; the follow-up on the same task, as text or as data,
// completes it.
func TestMultiTurnBlocking(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		for _, follow := range []struct {
			name string
			text string
			data map[string]any
		}{
			{"text", "Tokyo", nil},
			{"data", "", map[string]any{"city": "Tokyo"}},
		} {
			t.Run(versionName(v)+"/"+follow.name, func(t *testing.T) {
				send := methodName(v, a2a.MethodSendMessage)
				ans := a.Call(v, send, map[string]any{"message": userMessage(v, "weather", "", "", map[string]any{})})
				if ans.Error != nil {
					t.Fatalf("error %+v", ans.Error)
				}
				task := taskOf(v, ans.Result)
				requireQuestion(t, v, task)
				id, _ := task["id"].(string)

				ans = a.Call(v, send, map[string]any{"message": userMessage(v, "", id, follow.text, follow.data)})
				if ans.Error != nil {
					t.Fatalf("follow-up: error %+v", ans.Error)
				}
				done := taskOf(v, ans.Result)
				if done["id"] != id {
					t.Fatalf("the follow-up answered task %v, want %s", done["id"], id)
				}
				requireWeather(t, v, done, "Tokyo")
				history, _ := done["history"].([]any)
				if len(history) < 3 {
					t.Errorf("history has %d messages; want the first, the question and the follow-up", len(history))
				}
			})
		}
	}
}

// TestMultiTurnStreaming: the same over SendStreamingMessage; the first
// stream ends at the question, the second carries the follow-up's run.
func TestMultiTurnStreaming(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			method := methodName(v, a2a.MethodSendStreamingMessage)
			collect := func(msg map[string]any) (string, map[string]any, []map[string]any) {
				_, events := a.Stream(ctx, v, method, map[string]any{"message": msg})
				var id string
				var last map[string]any
				var artifacts []map[string]any
				for ev := range events {
					result, _ := ev["result"].(map[string]any)
					if v == "1.0" {
						for _, k := range []string{"task", "statusUpdate", "artifactUpdate"} {
							if inner, ok := result[k].(map[string]any); ok {
								result = inner
							}
						}
					}
					if s, ok := result["taskId"].(string); ok && id == "" {
						id = s
					}
					if s, ok := result["id"].(string); ok && id == "" {
						id = s
					}
					if _, ok := result["artifact"]; ok {
						artifacts = append(artifacts, result)
					}
					if _, ok := result["status"]; ok {
						last = result
					}
				}
				return id, last, artifacts
			}
			id, last, _ := collect(userMessage(v, "", "", "How is the weather?", nil))
			if id == "" || last == nil {
				t.Fatalf("the first stream carried no task")
			}
			requireQuestion(t, v, last)

			again, last, artifacts := collect(userMessage(v, "", id, "London", nil))
			if again != id {
				t.Fatalf("the follow-up's stream is for task %s, want %s", again, id)
			}
			if got := stateOf(last); got != wireState(v, a2a.TaskStateCompleted) {
				t.Fatalf("last state %q, want completed", got)
			}
			if b, _ := json.Marshal(artifacts); len(artifacts) != 1 || !strings.Contains(string(b), `"city":"London"`) {
				t.Errorf("artifact updates %s: want London's weather", b)
			}
		})
	}
}

// TestSelectionByText: a message that names no skill reaches the skill
// whose predicate claims its text, which takes the city from the text.
func TestSelectionByText(t *testing.T) {
	a := newAgent(t, nil)
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			ans := a.Call(v, methodName(v, a2a.MethodSendMessage),
				map[string]any{"message": userMessage(v, "", "", "What's the weather in New York?", nil)})
			if ans.Error != nil {
				t.Fatalf("error %+v", ans.Error)
			}
			requireWeather(t, v, taskOf(v, ans.Result), "New York")
		})
	}
}
