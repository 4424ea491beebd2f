package server_test

import (
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// methodName is m's name in the version the tests speak.
func methodName(version string, m a2a.Method) string {
	v, err := a2a.ParseVersion(version)
	if err != nil {
		panic(err)
	}
	return m.Name(v)
}

// wireState spells a state as version writes it.
func wireState(version string, s a2a.TaskState) string {
	if version == "1.0" {
		return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s.String(), "-", "_"))
	}
	return s.String()
}

var versions = []string{"", "1.0"}

func versionName(v string) string {
	if v == "" {
		return "0.3"
	}
	return v
}

// The helpers the tests share with the bindings' tests (servertest), by
// the names these tests use.
type (
	agent         = servertest.Agent
	authAgent     = servertest.AuthAgent
	rpcAnswer     = servertest.RPCAnswer
	authAnswer    = servertest.AuthAnswer
	failingStore  = servertest.FailingStore
	observations  = servertest.Observations
	answering     = servertest.Answering
	discardWriter = servertest.DiscardWriter
)

var (
	newAgent            = servertest.NewAgent
	newAuthAgent        = servertest.NewAuthAgent
	agentOnFailingStore = servertest.AgentOnFailingStore
	memoryHandler       = servertest.MemoryHandler
	serveH2C            = servertest.ServeH2C
	message             = servertest.Message
	newMessageID        = servertest.NewMessageID
	taskOf              = servertest.TaskOf
	stateOf             = servertest.StateOf
	mustJSON            = servertest.MustJSON
	statusParts         = servertest.StatusParts
	rpcBody             = servertest.RPCBody
	sseEvents           = servertest.SSEEvents
	errUnreachable      = servertest.ErrUnreachable
)

const (
	aliceKey    = servertest.AliceKey
	bobKey      = servertest.BobKey
	authSkills  = servertest.AuthSkills
	benchSkills = servertest.BenchSkills
	weatherBody = servertest.WeatherBody
)
