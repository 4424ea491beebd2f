package main

import (
	"context"
	"fmt"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/bench/internal/fixture"
	"github.com/caddy-a2a/caddy-a2a/bench/internal/load"
)

// grpcSendMessage is the blocking 1.0 SendMessage of fixture.SendMessage
// over the gRPC binding, with the official Go SDK's generated client: each
// load connection is a gRPC client connection of its own (h2c), making one
// call at a time, as each HTTP/1.1 connection does.
func grpcSendMessage(addr, skill string) load.Target {
	data, _ := structpb.NewValue(map[string]any{"id": 1})
	meta, _ := structpb.NewStruct(map[string]any{"skill": skill})
	parts := []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}
	version := metadata.Pairs("a2a-version", "1.0")
	return load.Target{Addr: addr, Open: func() (func(context.Context) error, func(), error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, nil, err
		}
		client := a2apb.NewA2AServiceClient(conn)
		call := func(ctx context.Context) error {
			// A message of its own each call: one sent again is answered
			// from the store, without the upstream.
			req := &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: fixture.MessageID(), Role: a2apb.Role_ROLE_USER,
				Metadata: meta, Parts: parts}}
			resp, err := client.SendMessage(metadata.NewOutgoingContext(ctx, version), req)
			if err != nil {
				return err
			}
			return checkItemTask(resp.GetTask())
		}
		return call, func() { conn.Close() }, nil
	}}
}

// checkItemTask wants a completed task whose artifact holds the upstream's
// item (its ref is fixture.ItemMarker).
func checkItemTask(task *a2apb.Task) error {
	if st := task.GetStatus().GetState(); st != a2apb.TaskState_TASK_STATE_COMPLETED {
		return fmt.Errorf("task state %s", st)
	}
	for _, art := range task.GetArtifacts() {
		for _, p := range art.GetParts() {
			if p.GetData().GetStructValue().GetFields()["ref"].GetStringValue() == fixture.ItemMarker {
				return nil
			}
		}
	}
	return fmt.Errorf("no artifact holds the item %s", fixture.ItemMarker)
}
