package pbconv_test

import (
	"reflect"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
)

// TestCode follows the table of spec 1.0 §5.4.
func TestCode(t *testing.T) {
	unavailable := a2a.InternalError("going away")
	unavailable.Reason = "UNAVAILABLE"
	for _, tc := range []struct {
		err  *a2a.Error
		want codes.Code
	}{
		{a2a.TaskNotFound("t"), codes.NotFound},
		{a2a.TaskNotCancelable("t", a2a.TaskStateCompleted), codes.FailedPrecondition},
		{a2a.PushNotificationNotSupported(), codes.FailedPrecondition},
		{a2a.UnsupportedOperation("x"), codes.FailedPrecondition},
		{a2a.ContentTypeNotSupported("x"), codes.InvalidArgument},
		{&a2a.Error{Code: a2a.CodeInvalidAgentResponse}, codes.Internal},
		{a2a.ExtendedAgentCardNotConfigured(), codes.FailedPrecondition},
		{&a2a.Error{Code: a2a.CodeExtensionSupportRequired}, codes.FailedPrecondition},
		{a2a.VersionNotSupported("9.9"), codes.FailedPrecondition},
		{a2a.InvalidParams("id", "is required"), codes.InvalidArgument},
		{a2a.MethodNotFound(a2a.V10, "X"), codes.Unimplemented},
		{a2a.InternalError("x"), codes.Internal},
		{unavailable, codes.Unavailable},
		{&a2a.Error{Code: a2a.CodeInternalError, Reason: "RESOURCE_EXHAUSTED"}, codes.ResourceExhausted},
		{&a2a.Error{Code: a2a.CodeUnauthenticated}, codes.Unauthenticated},
		{&a2a.Error{Code: a2a.CodeUnauthorized}, codes.PermissionDenied},
	} {
		if got := pbconv.Code(tc.err); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestStatus: ErrorInfo with the reason, domain and metadata, and a
// BadRequest for a field (spec 1.0 §10.6).
func TestStatus(t *testing.T) {
	st := pbconv.Status(a2a.InvalidParams("message.parts", "at least one part is required"))
	if st.Code() != codes.InvalidArgument || st.Message() != "Invalid parameters" {
		t.Errorf("status %s %q", st.Code(), st.Message())
	}
	var info *errdetails.ErrorInfo
	var bad *errdetails.BadRequest
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.BadRequest:
			bad = d
		}
	}
	if info == nil || info.Reason != "INVALID_PARAMS" || info.Domain != "a2a-protocol.org" {
		t.Errorf("ErrorInfo %v", info)
	}
	if bad == nil || bad.FieldViolations[0].Field != "message.parts" || bad.FieldViolations[0].Description != "at least one part is required" {
		t.Errorf("BadRequest %v", bad)
	}

	st = pbconv.Status(a2a.TaskNotFound("task-123"))
	if st.Code() != codes.NotFound || len(st.Details()) != 1 || st.Details()[0].(*errdetails.ErrorInfo).Metadata["taskId"] != "task-123" {
		t.Errorf("TaskNotFound: %v", st.Proto())
	}
}

// TestDecodeRequest: a request passes the JSON-RPC codec's checks, and
// its errors name fields within the request message.
func TestDecodeRequest(t *testing.T) {
	req, err := pbconv.DecodeRequest(a2a.MethodGetTask, &a2apb.GetTaskRequest{Id: "t1"})
	if err != nil || req.Params.(*a2a.GetTaskRequest).ID != "t1" {
		t.Fatalf("GetTask: %+v %v", req, err)
	}
	_, err = pbconv.DecodeRequest(a2a.MethodSendMessage, &a2apb.SendMessageRequest{
		Message: &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER}})
	if err == nil || err.Field != "message.parts" {
		t.Fatalf("a message without parts: %v", err)
	}
	parts := make([]*a2apb.Part, a2a.MaxParts+1)
	for i := range parts {
		parts[i] = &a2apb.Part{Content: &a2apb.Part_Text{Text: "x"}}
	}
	_, err = pbconv.DecodeRequest(a2a.MethodSendMessage, &a2apb.SendMessageRequest{
		Message: &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: parts}})
	if err == nil || err.Field != "message.parts" {
		t.Fatalf("too many parts: %v", err)
	}
	deep := structpb.NewStringValue("bottom")
	for range a2a.MaxJSONDepth + 1 {
		deep = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"d": deep}})
	}
	_, err = pbconv.DecodeRequest(a2a.MethodSendMessage, &a2apb.SendMessageRequest{
		Message: &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Metadata: deep.GetStructValue(),
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}})
	if err == nil {
		t.Fatal("metadata nested deeper than MaxJSONDepth was accepted")
	}
	zero := int32(0)
	req, err = pbconv.DecodeRequest(a2a.MethodListTasks, &a2apb.ListTasksRequest{PageSize: &zero})
	if err != nil || req.Params.(*a2a.ListTasksRequest).PageSize != nil {
		t.Fatalf("page size 0: %+v %v", req, err)
	}
}

// FuzzSendMessageRequest: a SendMessageRequest, whatever its fields, decodes
// to the very request (or error) the JSON route makes of it, whether or not
// DecodeRequest converts it field by field.
func FuzzSendMessageRequest(f *testing.F) {
	data, _ := structpb.NewValue(map[string]any{"id": 1, "deep": []any{map[string]any{"x": nil}, true, "s"}})
	meta, _ := structpb.NewStruct(map[string]any{"skill": "item"})
	history, negative := int32(3), int32(-1)
	message := func(parts ...*a2apb.Part) *a2apb.Message {
		return &a2apb.Message{MessageId: "m", ContextId: "c", TaskId: "t", Role: a2apb.Role_ROLE_USER, Metadata: meta,
			Extensions: []string{"e"}, ReferenceTaskIds: []string{"r"}, Parts: parts}
	}
	for _, in := range []*a2apb.SendMessageRequest{
		{Message: message(&a2apb.Part{Content: &a2apb.Part_Data{Data: data}})},
		{Tenant: "x", Metadata: meta, Message: message(
			&a2apb.Part{Content: &a2apb.Part_Text{Text: "hi"}, Metadata: meta},
			&a2apb.Part{Content: &a2apb.Part_Raw{Raw: []byte{0, 1}}, Filename: "f", MediaType: "application/octet-stream"},
			&a2apb.Part{Content: &a2apb.Part_Url{Url: "https://example.com/a"}}),
			Configuration: &a2apb.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: &history, ReturnImmediately: true}},
		{Message: message(&a2apb.Part{Content: &a2apb.Part_Text{}}),
			Configuration: &a2apb.SendMessageConfiguration{HistoryLength: &negative}},
		{Message: message(&a2apb.Part{Content: &a2apb.Part_Data{Data: structpb.NewNumberValue(1 << 60)}})},
		{Message: message(&a2apb.Part{})},
		{Message: &a2apb.Message{MessageId: "m", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}},
		{Message: message(&a2apb.Part{Content: &a2apb.Part_Text{Text: "x"}}),
			Configuration: &a2apb.SendMessageConfiguration{TaskPushNotificationConfig: &a2apb.TaskPushNotificationConfig{Url: "http://localhost/"}}},
	} {
		b, err := proto.Marshal(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := new(a2apb.SendMessageRequest)
		if proto.Unmarshal(b, in) != nil {
			return
		}
		got, gotErr := pbconv.DecodeRequest(a2a.MethodSendMessage, in)
		want, wantErr := pbconv.DecodeViaJSON(a2a.MethodSendMessage, in)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("%v:\n got %#v %v\nwant %#v %v", in, got, gotErr, want, wantErr)
		}
	})
}
