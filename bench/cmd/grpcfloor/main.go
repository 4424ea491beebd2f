// Command grpcfloor is the floor of the gRPC contenders: a bare grpc-go
// server on its own transport whose SendMessage does only what any gRPC
// agent must to answer the benchmark's call, fetch the upstream's GET /item
// and answer a completed task holding the body as a data artifact. It keeps
// no task, and authenticates, selects, maps and checks nothing: what
// caddy-a2a's gRPC listener costs above it is the agent's own work.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstream := flag.String("upstream", "", "the upstream's base URL, e.g. http://127.0.0.1:9090")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("grpcfloor: -upstream is required")
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("grpcfloor: %v", err)
	}
	// The benchmark reads the address from the first line of stdout.
	fmt.Println(ln.Addr().String())

	srv := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(srv, &floor{
		url: *upstream + "/item",
		// The same keep-alive pool caddy-a2a keeps per upstream.
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}},
	})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Stop()
	}()
	if err := srv.Serve(ln); err != nil {
		log.Fatalf("grpcfloor: %v", err)
	}
}

type floor struct {
	a2apb.UnimplementedA2AServiceServer
	url    string
	client *http.Client
	ids    atomic.Uint64
}

// SendMessage answers every message with a completed task holding the
// upstream's item.
func (f *floor) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	data, err := f.fetch(ctx)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	id := strconv.FormatUint(f.ids.Add(1), 10)
	return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: &a2apb.Task{
		Id: "task-" + id, ContextId: "context-" + id,
		Status:    &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED, Timestamp: timestamppb.Now()},
		Artifacts: []*a2apb.Artifact{{ArtifactId: "artifact-" + id, Name: "result", Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}},
		History:   []*a2apb.Message{req.GetMessage()},
	}}}, nil
}

// fetch makes the upstream call and decodes its JSON body.
func (f *floor) fetch(ctx context.Context) (*structpb.Value, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s", f.url, resp.Status)
	}
	data := new(structpb.Value)
	if err := protojson.Unmarshal(body, data); err != nil {
		return nil, fmt.Errorf("GET %s: %w", f.url, err)
	}
	return data, nil
}
