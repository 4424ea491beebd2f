package caddymodule

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/tools/dryrun"
)

// dryRunCommand is the name of the dry run subcommand.
const dryRunCommand = "a2a-dry-run"

// dryRunArgs are the dry run's flags.
type dryRunArgs struct {
	skills, message, version, upstream string
	responses                          []string
	live, mcp                          bool
}

// repeatedFlag collects every value of a flag given several times.
type repeatedFlag []string

func (f *repeatedFlag) String() string     { return strings.Join(*f, ", ") }
func (f *repeatedFlag) Set(v string) error { *f = append(*f, v); return nil }

func init() {
	fs := flag.NewFlagSet(dryRunCommand, flag.ExitOnError)
	fs.String("skills", "", "the skills file (required)")
	fs.String("message", "", "the sample A2A message, a JSON file, or - for standard input (required)")
	fs.String("version", "", "the message's A2A version, 0.3 or 1.0 (default: told from the message)")
	var responses repeatedFlag
	fs.Var(&responses, "response", "a sample upstream response file; repeat it for several calls")
	fs.String("upstream", "", "the upstream URL, replacing the skills file's")
	fs.Bool("live", false, "send the requests to the upstream for real")
	fs.Bool("mcp", false, "also show the skill as an MCP tool, and the tools/call result")
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  dryRunCommand,
		Usage: "--skills <file> --message <file> [--version <0.3|1.0>] [--response <file>]... [--upstream <URL>] [--live] [--mcp]",
		Short: "Shows what the a2a handler would do with one A2A message",
		Long: `
Serves one A2A message through the server the a2a handler runs, built from
a skills file, and prints: the skill chosen and why (named in metadata.skill,
which match predicate held, or the only skill), the arguments gathered, each
upstream request exactly as it is sent (credential values masked), each
answer, and the server's A2A answer (the task or message, in the message's
protocol version, with predictable ids). Nothing is sent to the network
unless --live.

--skills
    The skills file. Its {env.NAME} placeholders are read from the
    environment, as when Caddy loads it.

--message
    A JSON file holding an A2A message, the params of SendMessage
    ({"message": ..., "configuration": ...}) or a whole JSON-RPC SendMessage
    request; - reads standard input. It is checked as the server checks a
    request (messageId, role and parts are required).

--version
    The message's protocol version, 0.3 or 1.0; the answer is written in it.
    Default: told from the method's name or the message's role
    ("ROLE_USER" is 1.0, "user" is 0.3).

--response
    A sample upstream response: YAML (status, headers, and one of body,
    text, base64, file), a YAML list of them, or a raw HTTP response as
    "curl -i" prints it. The calls take the responses in order, a retry
    counting as a call; when they run out the run stops and the requests
    made so far are shown. Repeat the flag for several files.

--upstream
    The upstream URL, replacing the skills file's (as the handler's
    upstream setting does).

--live
    Send the requests to the upstream and show its real answers. Not with
    --response.

--mcp
    Also show the skill as the MCP endpoint (mcp) serves it: its tool, as
    tools/list lists it, and the result a tools/call with the message's
    arguments would answer.
`,
		Flags: fs,
		Func: func(fl caddycmd.Flags) (int, error) {
			return runDryRun(context.Background(), os.Stdin, os.Stdout, dryRunArgs{
				skills: fl.String("skills"), message: fl.String("message"), version: fl.String("version"),
				upstream: fl.String("upstream"), responses: responses, live: fl.Bool("live"), mcp: fl.Bool("mcp"),
			})
		},
	})
}

// runDryRun is the command: exit status 0 when the report was printed, 1
// when the skills file or an input file cannot be used, 2 for a usage error.
func runDryRun(ctx context.Context, stdin io.Reader, w io.Writer, args dryRunArgs) (int, error) {
	switch {
	case args.skills == "":
		return 2, fmt.Errorf("%s: --skills is required", dryRunCommand)
	case args.message == "":
		return 2, fmt.Errorf("%s: --message is required", dryRunCommand)
	case args.live && len(args.responses) > 0:
		return 2, fmt.Errorf("%s: --live and --response exclude each other", dryRunCommand)
	}
	var src []byte
	var err error
	if args.message == "-" {
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(args.message)
	}
	if err != nil {
		return 1, fmt.Errorf("%s: reading the message: %w", dryRunCommand, err)
	}
	sample, err := dryrun.ParseSampleMessage(src, args.version)
	if err != nil {
		return 1, fmt.Errorf("%s: %w", dryRunCommand, err)
	}
	responses, err := dryrun.ReadSampleResponses(args.responses...)
	if err != nil {
		return 1, fmt.Errorf("%s: %w", dryRunCommand, err)
	}
	rep, err := dryrun.Run(ctx, args.skills, mapping.Options{UpstreamURL: args.upstream},
		dryrun.Input{Sample: sample, Responses: responses, Live: args.live, MCP: args.mcp})
	if err != nil {
		return 1, fmt.Errorf("%s: %w", dryRunCommand, err)
	}
	if err := rep.Write(w); err != nil {
		return 1, fmt.Errorf("%s: writing the report: %w", dryRunCommand, err)
	}
	return 0, nil
}
