// Command sdkagent is the agent an operator would otherwise write by hand
// with the official Go SDK (github.com/a2aproject/a2a-go/v2): the SDK's
// JSON-RPC handler and default in-memory task store, and an executor that
// makes the same upstream call as caddy-a2a's "item" skill and answers the
// same task: completed, with the upstream's JSON body as a data artifact
// named "result".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstream := flag.String("upstream", "", "the upstream's base URL, e.g. http://127.0.0.1:9090")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("sdkagent: -upstream is required")
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("sdkagent: %v", err)
	}
	// The benchmark reads the address from the first line of stdout.
	fmt.Println(ln.Addr().String())
	url := "http://" + ln.Addr().String() + "/"

	card := &a2a.AgentCard{
		Name:                "Bench SDK Agent",
		Description:         "The benchmark agent written with the a2a-go SDK",
		Version:             "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"application/json"},
		DefaultOutputModes:  []string{"application/json"},
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		Skills: []a2a.AgentSkill{{
			ID: "item", Name: "Item", Description: "One catalogue item, as the upstream answers it.", Tags: []string{"bench"},
		}},
	}
	exec := &executor{
		url: *upstream + "/item",
		// The same keep-alive pool caddy-a2a keeps per upstream.
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}},
	}
	mux := http.NewServeMux()
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatalf("sdkagent: %v", err)
	}
}

type executor struct {
	url    string
	client *http.Client
}

func (e *executor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if execCtx.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(execCtx, execCtx.Message), nil) {
				return
			}
		}
		data, err := e.fetch(ctx)
		if err != nil {
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, execCtx, a2a.NewTextPart("the upstream call failed: "+err.Error()))
			yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateFailed, msg), nil)
			return
		}
		artifact := a2a.NewArtifactEvent(execCtx, a2a.NewDataPart(data))
		artifact.Artifact.Name = "result"
		artifact.LastChunk = true
		if !yield(artifact, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCompleted, nil), nil)
	}
}

func (e *executor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(execCtx, a2a.TaskStateCanceled, nil), nil)
	}
}

// fetch makes the upstream call and decodes its JSON body.
func (e *executor) fetch(ctx context.Context) (any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s", e.url, resp.Status)
	}
	var data any
	if err := json.Unmarshal(body, &data); err != nil {
		return nil, fmt.Errorf("GET %s: %w", e.url, err)
	}
	return data, nil
}
