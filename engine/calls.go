package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallTool calls server.tool. Arguments are built from req, validated
// against the tool's input schema and only then sent. A tool that reports
// failure (isError) is a result, not an error, as is one whose
// structuredContent breaks its outputSchema: that result carries what is
// wrong under _meta[WarningsMetaKey]. A tool whose
// execution.taskSupport is "required" (or "optional", with req.Task) runs as
// a task: created, polled, and its result fetched.
func (e *Engine) CallTool(ctx context.Context, req *CallRequest) (*CallResult, error) {
	if req == nil {
		return nil, nilRequest("CallTool", "CallRequest")
	}
	if err := badRequest("CallTool", "CallRequest", req.TimeoutMs, req.Retry); err != nil {
		return nil, err
	}
	srvName, toolName, err := SplitName(req.Name)
	if err != nil {
		return nil, e.withoutServer(req.Name, "tool", err)
	}
	s, err := e.lookup(srvName)
	if err != nil {
		return nil, err
	}
	if req.OnProgress != nil {
		relay := newProgressRelay(req.OnProgress, e.log)
		r := *req
		r.OnProgress = relay.send
		returned := false
		defer func() {
			if !returned {
				relay.stop(ctx, false) // the call panicked: that panic goes on
			}
		}()
		res, err := e.callTool(ctx, s, toolName, &r)
		returned = true
		stopCtx := ctx
		if KindOf(err) == KindTimeout {
			// The call's own time ran out (TimeoutMs, requestTimeout):
			// as for its context's end, the queue is not waited for.
			ended, cancel := context.WithCancel(ctx)
			cancel()
			stopCtx = ended
		}
		relay.stop(stopCtx, true)
		return res, err
	}
	return e.callTool(ctx, s, toolName, req)
}

// callTool is CallTool once its request is checked and its server found.
func (e *Engine) callTool(ctx context.Context, s *server, toolName string, req *CallRequest) (*CallResult, error) {
	srvName := s.cfg().Name
	// A call is tried once unless the caller asks for retries or the tool
	// says calling it twice does no harm.
	tries := 1 + req.Retry
	var res *CallResult
	err := e.retrying(ctx, &tries, s, func(ctx context.Context) (err error) {
		res, err = e.callOnce(ctx, s, toolName, req, &tries)
		return err
	})
	return res, deadlineError(err, srvName, "the call to "+req.Name)
}

func (e *Engine) callOnce(ctx context.Context, s *server, toolName string, req *CallRequest, tries *int) (res *CallResult, err error) {
	srvName := s.cfg().Name
	h, err := s.acquireWithin(ctx, req.TimeoutMs)
	if err != nil {
		return nil, err
	}
	s = h.s // the server a reload put in its place, perhaps
	defer h.release()
	tool := h.snap.toolByName[toolName]
	if tool == nil {
		return nil, unknownTool(s.cfg(), h.snap, srvName, toolName)
	}
	defer func() {
		// Asked only when it matters: after a failure. A timeout the
		// caller set bounds the call, not each try of it.
		if err != nil && req.Retry == 0 && req.TimeoutMs == 0 && tool.Idempotent() {
			*tries = retryTries
		}
	}()
	args, err := buildArguments(tool, req.Arguments, req.Pairs)
	if err != nil {
		return nil, err
	}
	if err := tool.validate(args); err != nil {
		return nil, err
	}
	support := tool.TaskSupport()
	if req.Task && support == "forbidden" {
		return nil, errorf(KindUsage, srvName, "%s cannot run as a task (its execution.taskSupport is forbidden)", tool.Name()).
			hint("call it without --task")
	}
	token := e.nextToken()
	// Progress keeps the call alive: each notification extends its deadline.
	defer e.watchProgress(token, func(p Progress) {
		h.deadline.Load().extend()
		if req.OnProgress != nil {
			req.OnProgress(p)
		}
	})()
	call := &asker{caller: req.Caller, sampling: req.Sampling, elicitation: req.Elicitation, hold: h.holdDeadline, ctx: ctx}
	if support == "required" || (support == "optional" && req.Task) {
		return h.callTask(ctx, tool, args, token, req, call)
	}
	defer s.askers.add(call)()
	what := "the call to " + tool.Name()
	for round := 0; ; round++ {
		raw, err := h.doFor(ctx, "tools/call", what, req.TimeoutMs, func(ctx context.Context) (any, error) {
			params := &mcp.CallToolParams{Name: toolName, Arguments: args}
			params.SetProgressToken(token)
			return h.cs.CallTool(ctx, params)
		})
		// A server that needs the user to visit a URL first says so with
		// an error (-32042); once they did, the call is made again.
		if els := urlElicitations(err); els != nil && round < maxURLRounds {
			if err := s.satisfy(ctx, what, els, err, req.Elicitation, call); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return callResult(srvName, tool, raw)
	}
}

// maxURLRounds bounds how often one call sends its user to a URL: a server
// that asks again after every visit would otherwise loop.
const maxURLRounds = 3

// reader is a request other than a call in flight (a prompt, a read, a
// completion): it answers no question itself, but while it is in flight a
// question could be its, so no call of another caller is asked one (a
// hook is, or it is declined); one of its own caller's (a serve client
// of both) is. A hook answering holds its deadline.
func (h *handle) reader(caller string) *asker {
	return &asker{caller: caller, hold: h.holdDeadline}
}

// holdDeadline stops the running request's deadline until resume.
func (h *handle) holdDeadline() (resume func()) {
	return h.deadline.Load().hold()
}

// brokenResult is the error of a result (of method, from server) without
// the array field MCP requires of it: a null result, say, which the SDK
// takes for none, and which was printed as a success.
func brokenResult(server, method, field string) *Error {
	return errorf(KindProtocol, server, "server %s answered %s with a result that breaks MCP: it has no %s array", server, method, field).
		hint("tell the server's authors; with MCPCTL_TRACE=1, mcpctl up logs each message as sent (servers/%s.wire.jsonl)", server)
}

// hasArray says whether raw, a result as the server sent it, has an array
// member name. Checked on the answer, not on the SDK's decoding of it,
// which may fail over something else (a blob that is not strict base64)
// that mcpctl passes on as sent.
func hasArray(raw json.RawMessage, name string) bool {
	ms, err := members(raw)
	if err != nil {
		return false
	}
	for _, m := range slices.Backward(ms) { // the last, as a decoder reads
		if m.key == name {
			return len(m.value) > 0 && m.value[0] == '['
		}
	}
	return false
}

func callResult(server string, tool *Tool, raw json.RawMessage) (*CallResult, error) {
	// Scanned, not decoded: a result can be megabytes of content.
	var isError bool
	var structured, meta json.RawMessage
	ms, err := members(raw)
	malformed := func(what string) (*CallResult, error) {
		return nil, errorf(KindProtocol, server, "%s answered with a result that breaks MCP: %s", tool.Name(), what).
			hint("tell the server's authors; with MCPCTL_TRACE=1, mcpctl up logs each message as sent (servers/%s.wire.jsonl)", server)
	}
	if err != nil {
		return malformed("it is not a JSON object")
	}
	for _, m := range ms {
		switch m.key {
		case "content":
			if len(m.value) == 0 || m.value[0] != '[' {
				return malformed("its content is not an array")
			}
		case "structuredContent":
			if len(m.value) == 0 || m.value[0] != '{' && string(m.value) != "null" {
				return malformed("its structuredContent is not an object")
			}
			structured = m.value
		case "_meta":
			meta = m.value
		case "isError":
			if v := string(m.value); v != "true" && v != "false" && v != "null" {
				return malformed("its isError is not true or false")
			}
			isError = string(m.value) == "true"
		case "resultType":
			if string(m.value) == `"input_required"` {
				return nil, errorf(KindProtocol, server, "%s asked for input (resultType input_required), which mcpctl cannot provide yet", tool.Name())
			}
		}
	}
	var warnings []string
	if !isError {
		warnings = tool.outputWarnings(structured)
	}
	switch {
	case warnings != nil:
		raw = addMeta(raw, WarningsMetaKey, warnings)
	case bytes.Contains(meta, []byte(`"`+WarningsMetaKey+`"`)):
		// mcpctl's words, not the server's: one that sent the key itself
		// would have the CLI print "mcpctl: warning: " with its text.
		raw = addMeta(raw, WarningsMetaKey, nil)
	}
	return &CallResult{Server: server, Tool: tool.Tool, Result: raw, IsError: isError}, nil
}
