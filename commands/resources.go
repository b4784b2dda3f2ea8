package commands

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

func newResourcesCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "resources",
		Usage:     "List the resources and resource templates of every server, or of one",
		ArgsUsage: "[SERVER]",
		Description: `Lists resources (by URI) and resource templates (RFC 6570). In JSON:
{"resources": [...], "resourceTemplates": [...]}, each object as its server
listed it with "server" added; "stale": true marks the last known lists of a
server that is unavailable.

  mcpctl resources
  mcpctl resources everything --jq '.resourceTemplates[].uriTemplate'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("resources takes at most one argument: a server")
			}
			return runResources(ctx, env, cmd.Args().First())
		},
	}
}

func runResources(ctx context.Context, env *Env, server string) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var rs *engine.Resources
	var unlisted error
	err = env.withHostLists(ctx, serverOf(server), func(h host) error {
		rs, err = h.Resources(ctx, server)
		unlisted, err = partialList(rs != nil, err)
		return err
	})
	if err != nil {
		return err
	}
	return printThen(unlisted, p.Print(rs, func(w io.Writer) error {
		rows := make([][]string, len(rs.Resources))
		for i, r := range rs.Resources {
			rows[i] = []string{r.URI + staleMark(r.Stale), r.Server, r.Name(), r.MIMEType()}
		}
		if err := output.Table(w, []string{"uri", "server", "name", "type"}, rows); err != nil {
			return err
		}
		if len(rs.Templates) == 0 {
			return nil
		}
		fmt.Fprintln(w)
		rows = make([][]string, len(rs.Templates))
		for i, t := range rs.Templates {
			rows[i] = []string{t.URITemplate + staleMark(t.Stale), t.Server, t.Name()}
		}
		return output.Table(w, []string{"template", "server", "name"}, rows)
	}))
}

type resourceOptions struct {
	uri     string
	server  string
	outFile string
	noCache bool
	timeout durationFlag
}

func newResourceCmd(env *Env) *cli.Command {
	var opts resourceOptions
	return &cli.Command{
		Name:      "resource",
		Usage:     "Read a resource",
		ArgsUsage: "URI",
		Description: `Reads a resource from the server that lists its URI, or whose resource
template matches it; when several do, it exits 2 listing them, and --server
chooses. Text prints as text on a terminal; the whole MCP result prints as
JSON otherwise (a blob stays base64). --output-file writes the content (a
blob decoded) to a file instead; an answer from the session's cache says
so.

A session caches reads for cacheTTL (default 5m; less when a server of MCP
2026-07-28 or later says so with ttlMs), until the server says the
resource or its list changed; a cached answer carries _meta["mcpctl/cache"].

  mcpctl resource demo://resource/static/document/architecture.md
  mcpctl resource demo://resource/dynamic/text/1 --server everything
  mcpctl resource demo://resource/dynamic/blob/1 --output-file blob.bin`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "read from `SERVER`", Destination: &opts.server},
			&cli.StringFlag{Name: "output-file", Aliases: []string{"o"}, Usage: "write the content (a blob decoded) to `FILE`; -o - to stdout", Destination: &opts.outFile},
			&cli.BoolFlag{Name: "no-cache", Usage: "ask the server even if the session has a fresh answer", Destination: &opts.noCache},
			timeoutFlag(&opts.timeout),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("resource needs one URI: mcpctl resource URI", "list the resources with: mcpctl resources")
			}
			opts.uri = cmd.Args().First()
			if opts.outFile == "-" && env.format.JQ != "" {
				// It would be ignored: what goes out is the content, not JSON.
				return usagef("--jq filters JSON, and --output-file - prints the content itself",
					"leave out --output-file - to filter the read's JSON, e.g. --jq '.contents[0].text' -r")
			}
			if strings.HasSuffix(opts.outFile, "/") {
				// A directory's path, which abs would clean into a file's.
				return usagef(fmt.Sprintf("--output-file %s: a path that ends in / names a directory", opts.outFile), "give --output-file a file's path, or - for stdout")
			}
			return runResource(ctx, env, opts)
		},
	}
}

func runResource(ctx context.Context, env *Env, opts resourceOptions) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	timeout := opts.timeout.millis()
	req := &engine.ResourceRequest{URI: opts.uri, Server: opts.server, NoCache: opts.noCache, TimeoutMs: timeout}
	var res *engine.ResourceResult
	// Found from the lists when no server is named: one server that
	// cannot start must not keep the read from the one that offers it.
	hopts := hostOptions{startWithin: opts.timeout.d, partial: true}
	err = env.withHostOpts(ctx, serverOf(opts.server), hopts, func(h host) error {
		res, err = h.ReadResource(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if opts.outFile != "" {
		return writeResource(env, p, res, opts.outFile)
	}
	return p.Print(res.Result, func(w io.Writer) error { return output.ResourceContents(w, res.Result) })
}

// writeResource writes the contents of a read (blobs decoded) to file and
// says what it wrote.
func writeResource(env *Env, p *output.Printer, res *engine.ResourceResult, file string) error {
	var rr struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MIMEType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(res.Result, &rr); err != nil {
		return err
	}
	var uris []string
	for _, c := range rr.Contents {
		if c.URI != "" && !slices.Contains(uris, c.URI) { // one without is no other resource
			uris = append(uris, c.URI)
		}
	}
	if len(uris) > 1 {
		// One file holds one resource: parts of several, run together,
		// would be none of them.
		return &engine.Error{Kind: engine.KindUsage, Server: res.Server,
			Message: fmt.Sprintf("server %s answered the read of %s with %d resources (%s); --output-file writes one", res.Server, res.URI, len(uris), strings.Join(uris, ", ")),
			Hint:    []string{"read it without --output-file to get each as JSON, e.g. --jq '.contents[] | select(.uri == \"URI\") | .text' -r"}}
	}
	var data []byte
	mime := ""
	for _, c := range rr.Contents {
		switch {
		case c.Blob != nil:
			b, err := decodeBase64(*c.Blob)
			if err != nil {
				return &engine.Error{Kind: engine.KindProtocol, Server: res.Server, Message: fmt.Sprintf("server %s sent a blob that is not base64: %v", res.Server, err)}
			}
			data = append(data, b...)
		case c.Text != nil:
			data = append(data, *c.Text...)
		}
		if mime == "" {
			mime = c.MIMEType
		}
	}
	const fromCache = "the session's cached answer (--no-cache asks the server)"
	if file == "-" {
		// The content itself, raw, as tools that take -o - do.
		if res.Cached {
			env.note("%s: %s", res.URI, fromCache)
		}
		_, err := env.Out.Write(data)
		return err
	}
	if err := os.WriteFile(env.abs(file), data, 0o644); err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error() // the path is file, said once
		}
		if errors.Is(err, syscall.EISDIR) {
			return usagef(fmt.Sprintf("writing %s: it is a directory", file), fmt.Sprintf("name a file in it: %s", filepath.Join(file, "NAME")))
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			// A path the user gave that cannot be written: theirs to fix.
			return usagef(fmt.Sprintf("writing %s: %s", file, msg), "give --output-file a file in a directory you can write, or - for stdout")
		}
		return fmt.Errorf("writing %s: %s", file, msg)
	}
	summary := map[string]any{"uri": res.URI, "server": res.Server, "file": file, "bytes": len(data), "mimeType": mime}
	if res.Cached {
		summary["cached"] = true
	}
	return p.Print(summary, func(io.Writer) error {
		if res.Cached {
			env.note("wrote %d bytes of %s to %s: %s", len(data), res.URI, file, fromCache)
			return nil
		}
		env.note("wrote %d bytes of %s to %s", len(data), res.URI, file)
		return nil
	})
}

func newInspectCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "Show everything each server declared",
		ArgsUsage: "[SERVER]",
		Description: `Shows, for every server or one: its info, the negotiated protocol version,
its capabilities and instructions as it sent them, and its tools, prompts,
resources and resource templates (on a terminal by name; JSON has each
whole). JSON is an array with one object per server.

  mcpctl inspect everything
  mcpctl inspect --jq '.[] | {name, protocolVersion, capabilities}'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("inspect takes at most one argument: a server")
			}
			return runInspect(ctx, env, cmd.Args().First())
		},
	}
}

func runInspect(ctx context.Context, env *Env, server string) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var ins []*engine.Inspection
	var unlisted error
	err = env.withHostLists(ctx, serverOf(server), func(h host) error {
		ins, err = h.Inspect(ctx, server)
		unlisted, err = partialList(ins != nil, err)
		return err
	})
	if err != nil {
		return err
	}
	return printThen(unlisted, p.Print(ins, func(w io.Writer) error {
		for i, in := range ins {
			if i > 0 {
				fmt.Fprintln(w)
			}
			var info struct{ Name, Title, Version string }
			json.Unmarshal(in.ServerInfo, &info)
			var caps map[string]json.RawMessage
			json.Unmarshal(in.Capabilities, &caps)
			names := make([]string, 0, len(caps))
			for k := range caps {
				names = append(names, k)
			}
			sort.Strings(names)
			fmt.Fprintf(w, "%s%s: %s %s (protocol %s)\n", in.Name, staleMark(in.Stale), info.Name, info.Version, in.ProtocolVersion)
			fmt.Fprintf(w, "  capabilities: %s\n", joinOr(names, "none"))
			// What it offers, by name (the details: tools, prompts, resources).
			listLine(w, "tools", in.Tools, "", func(t *engine.Tool) string { return t.Tool })
			listLine(w, "prompts", in.Prompts, in.ListErrors["prompts/list"], func(p *engine.Prompt) string { return p.Prompt })
			listLine(w, "resources", in.Resources, in.ListErrors["resources/list"], func(r *engine.Resource) string { return r.URI })
			listLine(w, "resource templates", in.Templates, in.ListErrors["resources/templates/list"], func(t *engine.Template) string { return t.URITemplate })
			// Whole: they tell how to use the server.
			if ins := strings.TrimSpace(in.Instructions); strings.Contains(ins, "\n") {
				fmt.Fprintln(w, "  instructions:")
				indented(w, ins, "    ")
			} else if ins != "" {
				fmt.Fprintf(w, "  instructions: %s\n", ins)
			}
		}
		return nil
	}))
}

// listLine writes "  what (n): a, b, c", "  what: none", or, for a list
// the server answered with an error (failed), that it is not known.
func listLine[T any](w io.Writer, what string, items []T, failed string, name func(T) string) {
	if failed != "" {
		fmt.Fprintf(w, "  %s: not known (%s)\n", what, output.Printable(failed))
		return
	}
	if len(items) == 0 {
		fmt.Fprintf(w, "  %s: none\n", what)
		return
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = output.Printable(name(it))
	}
	fmt.Fprintf(w, "  %s (%d): %s\n", what, len(items), strings.Join(names, ", "))
}

type completeOptions struct {
	server  string
	context []string
	timeout durationFlag
}

func newCompleteCmd(env *Env) *cli.Command {
	var opts completeOptions
	return &cli.Command{
		Name:      "complete",
		Usage:     "Complete an argument of a prompt or a resource template",
		ArgsUsage: "SERVER.PROMPT|URI-TEMPLATE ARGUMENT PREFIX",
		Description: `Asks the server for values of an argument that start with PREFIX
(completion/complete). The reference is a prompt, as server.prompt, or a
resource template as the server lists it. Values print one per line on a
terminal; the whole MCP result prints as JSON otherwise.

  mcpctl complete everything.completable-prompt department E
  mcpctl complete 'demo://resource/dynamic/text/{resourceId}' resourceId 1
  mcpctl complete everything.completable-prompt name A --context department=Engineering`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "ask `SERVER` (for a template several servers have)", Destination: &opts.server},
			&cli.StringSliceFlag{Name: "context", Usage: "an argument already chosen, as `KEY=VALUE` (repeatable)", Destination: &opts.context},
			timeoutFlag(&opts.timeout),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 3 {
				return usagef("complete needs three arguments: mcpctl complete SERVER.PROMPT|URI-TEMPLATE ARGUMENT PREFIX")
			}
			a := cmd.Args().Slice()
			return runComplete(ctx, env, a[0], a[1], a[2], opts)
		},
	}
}

func runComplete(ctx context.Context, env *Env, ref, arg, prefix string, opts completeOptions) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	timeout := opts.timeout.millis()
	req := &engine.CompleteRequest{Ref: ref, Server: opts.server, Argument: arg, Value: prefix, TimeoutMs: timeout}
	for _, kv := range opts.context {
		k, v, ok := strings.Cut(kv, "=")
		_, twice := req.Context[k]
		switch {
		case !ok || k == "":
			return usagef(fmt.Sprintf("--context %q is not KEY=VALUE", kv), "e.g. --context department=Engineering")
		case k == arg:
			return usagef(fmt.Sprintf("--context %s is the argument being completed", k), "--context takes the other arguments, already chosen")
		case twice:
			return usagef(fmt.Sprintf("--context %s is given more than once", k), "give each argument once")
		}
		if req.Context == nil {
			req.Context = map[string]string{}
		}
		req.Context[k] = v
	}
	need := serverOf(opts.server)
	if opts.server == "" {
		if s, _, err := engine.SplitName(ref); err == nil && !isTemplate(ref) {
			need = serverOf(s)
		} else {
			need = serverOf("") // the template's server is found from the lists
		}
	}
	var res *engine.CompleteResult
	err = env.withHostOpts(ctx, need, hostOptions{startWithin: opts.timeout.d, partial: true}, func(h host) error {
		res, err = h.Complete(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	return p.Print(res.Result, func(w io.Writer) error { return output.Completions(w, res.Result) })
}

// decodeBase64 decodes a blob as MCP asks (standard, padded), or as some
// servers send it: unpadded, or URL-safe.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err == nil {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, lenient := enc.DecodeString(s); lenient == nil {
			return b, nil
		}
	}
	return nil, err
}
