package caddymodule

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/caddy-a2a/caddy-a2a/tools/openapi"
)

// openAPICommand is the name of the skills generator subcommand.
const openAPICommand = "a2a-openapi"

// openAPIArgs are the generator's flags.
type openAPIArgs struct {
	spec, operations, upstream, output string
	list                               bool
}

func init() {
	flags := flag.NewFlagSet(openAPICommand, flag.ExitOnError)
	flags.String("spec", "", "the OpenAPI 3 or Swagger 2.0 document, YAML or JSON, or - for standard input (required)")
	flags.String("operations", "", "the operations to make skills of, comma-separated: operationIds or \"METHOD /path\" (default: all)")
	flags.String("upstream", "", "the API's base URL (default: the document's first server)")
	flags.String("output", "", "write the skills file here instead of to standard output; an existing file is not replaced")
	flags.Bool("list", false, "list the document's operations and stop")
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  openAPICommand,
		Usage: "--spec <file> [--operations <id,...>] [--upstream <URL>] [--output <file>] [--list]",
		Short: "Writes a starting skills file from an OpenAPI 3 or Swagger 2.0 document",
		Long: `
Writes a skills file for the a2a handler from an OpenAPI 3 document (3.0 or
3.1, YAML or JSON), or a Swagger 2.0 one: one skill per operation, with the
operation's summary, description and tags; its arguments from the path,
query and header parameters and from the properties of a JSON, form or
multipart request body (types, required, enums, defaults, descriptions,
examples); the request (method, path, query, headers, body); the output
modes from the success responses; and the security schemes' credentials as
{env.NAME} placeholders in upstream.headers, or upstream.oauth2 for OAuth2
client credentials. The file loads as it is; review it and add response
rules, text patterns and match predicates. What could not be carried over is
said in comments in the file and on standard error.

--spec
    The OpenAPI document; - reads standard input. Only $refs within the
    document are followed: bundle a document split across files first.

--operations
    The operations to make skills of, comma-separated, each an operationId
    or "METHOD /path" (for example getUser,"POST /orders"). Default: all.
    --list shows them.

--upstream
    The API's base URL. Default: the document's first server (its
    variables at their defaults).

--output
    Write the file here rather than to standard output. An existing file
    is not replaced.

--list
    List the document's operations (operationId, method, path, summary)
    and stop.

An operation that cannot be made a skill is left out, with a note that
says why, and the file holds every other one. Exit status: 0 when the file
was written with every operation picked, 3 when it was written without some
(the notes say which), 1 when the document cannot be used and no file was
written, 2 for a usage error.
`,
		Flags: flags,
		Func: func(fl caddycmd.Flags) (int, error) {
			return runOpenAPI(os.Stdin, os.Stdout, os.Stderr, openAPIArgs{
				spec: fl.String("spec"), operations: fl.String("operations"), upstream: fl.String("upstream"),
				output: fl.String("output"), list: fl.Bool("list"),
			})
		},
	})
}

// The command's exit statuses.
const (
	openAPIUnusable = 1 // the document cannot be used, or the file was not written
	openAPIUsage    = 2
	openAPILeftOut  = 3 // the file was written without some of the operations picked
)

// runOpenAPI is the command: exit status 0 when the file was written with
// every operation picked, or one of the statuses above.
func runOpenAPI(stdin io.Reader, stdout, stderr io.Writer, args openAPIArgs) (int, error) {
	if args.spec == "" {
		return openAPIUsage, fmt.Errorf("%s: --spec is required", openAPICommand)
	}
	var src []byte
	var err error
	name := args.spec
	if args.spec == "-" {
		name = "standard input"
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(args.spec)
	}
	if err != nil {
		return openAPIUnusable, fmt.Errorf("%s: reading the document: %w", openAPICommand, err)
	}
	if args.list {
		ops, err := openapi.Operations(name, src)
		if err != nil {
			return openAPIUnusable, fmt.Errorf("%s: %w", openAPICommand, err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, op := range ops {
			id := op.ID
			if id == "" {
				id = "-"
			}
			fmt.Fprintf(tw, "%s\t%s %s\t%s\n", id, op.Method, op.Path, op.Summary)
		}
		if err := tw.Flush(); err != nil {
			return openAPIUnusable, fmt.Errorf("%s: %w", openAPICommand, err)
		}
		return 0, nil
	}
	opts := openapi.Options{UpstreamURL: args.upstream}
	for _, op := range strings.Split(args.operations, ",") {
		if op = strings.TrimSpace(op); op != "" {
			opts.Operations = append(opts.Operations, op)
		}
	}
	r, err := openapi.Generate(name, src, opts)
	if err != nil {
		return openAPIUnusable, fmt.Errorf("%s: %w", openAPICommand, err)
	}
	if args.output == "" {
		if _, err := stdout.Write(r.YAML); err != nil {
			return openAPIUnusable, fmt.Errorf("%s: %w", openAPICommand, err)
		}
	} else if err := writeNew(args.output, r.YAML); err != nil {
		return openAPIUnusable, fmt.Errorf("%s: %w", openAPICommand, err)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if len(r.Env) > 0 {
		fmt.Fprintf(stderr, "The file reads the environment variables %s when it loads.\n", strings.Join(r.Env, ", "))
	}
	if len(r.LeftOut) > 0 {
		return openAPILeftOut, fmt.Errorf("%s: %d of %d operations are left out (the notes say why): the file holds the other %d; "+
			"--operations picks the operations to keep (--list lists them)", openAPICommand, len(r.LeftOut), len(r.LeftOut)+len(r.Skills), len(r.Skills))
	}
	return 0, nil
}

// writeNew writes a file that must not exist yet; one it could not write
// whole is removed, so that nothing is written and the next run may
// write it.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: choose another --output, or remove it first", path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return errors.Join(err, os.Remove(path))
	}
	return nil
}
