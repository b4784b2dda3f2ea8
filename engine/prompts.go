package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpctl/mcpctl/schemas"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GetPrompt gets server.prompt with its arguments, checked against the ones
// the prompt declares. Answers come from the cache when fresh, even when the
// server is down (not once [Engine.Stop] stopped it: that drops them).
func (e *Engine) GetPrompt(ctx context.Context, req *PromptRequest) (*PromptResult, error) {
	if req == nil {
		return nil, nilRequest("GetPrompt", "PromptRequest")
	}
	if err := badRequest("GetPrompt", "PromptRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	if err := e.open(); err != nil {
		return nil, err // a cached answer too: the engine holds nothing after Close
	}
	srvName, promptName, err := splitName(req.Name, "prompt")
	if err != nil {
		return nil, e.withoutServer(req.Name, "prompt", err)
	}
	s, err := e.lookup(srvName)
	if err != nil {
		return nil, err
	}
	var res *PromptResult
	err = e.retrying(ctx, readTries(req.TimeoutMs), s, func(ctx context.Context) (err error) {
		res, err = e.promptOnce(ctx, s, promptName, req)
		return err
	})
	return res, deadlineError(err, srvName, "prompt "+req.Name)
}

func (e *Engine) promptOnce(ctx context.Context, s *server, promptName string, req *PromptRequest) (*PromptResult, error) {
	srvName := s.cfg().Name
	// A fresh answer is given whatever the server's state: it may be down,
	// or one that starts on use need not start. Arguments that made it were
	// checked when it was asked.
	if args, err := mergePromptArgs(srvName, req); err == nil && !req.NoCache {
		if raw, ok := e.cache.get(cacheKey(srvName, "prompts/get", &mcp.GetPromptParams{Name: promptName, Arguments: args})); ok {
			return &PromptResult{Server: srvName, Prompt: promptName, Result: raw, Cached: true}, nil
		}
	}
	h, err := s.acquireWithin(ctx, req.TimeoutMs)
	if err != nil {
		return nil, err
	}
	s = h.s // the server a reload put in its place, perhaps
	defer h.release()
	if len(h.snap.unlisted) > 0 {
		if sn := s.fill(); sn != nil {
			h.snap = sn
		}
	}
	prompt := h.snap.promptByName[promptName]
	if prompt == nil {
		if f := h.snap.failures(listPrompts); len(f) > 0 {
			return nil, f[0].clone() // it may be there, unlisted: not "unknown"
		}
		return nil, unknownName("prompt", req.Name, srvName, h.snap.names(listPrompts))
	}
	args, err := promptArguments(prompt, req)
	if err != nil {
		return nil, err
	}
	params := &mcp.GetPromptParams{Name: promptName, Arguments: args}
	key := cacheKey(srvName, "prompts/get", params)
	defer s.askers.add(h.reader(req.Caller))()
	unanswered := s.unanswered.Load()
	raw, err := h.doFor(ctx, "prompts/get", "prompt "+req.Name, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.GetPrompt(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	// The answer as sent is checked: the SDK's own call may have failed
	// after it came (its connection closed), or over what mcpctl passes on
	// as sent (an image's data that is not strict base64).
	if !hasArray(raw, "messages") {
		return nil, brokenResult(srvName, "prompts/get", "messages")
	}
	if s.unanswered.Load() == unanswered {
		e.cache.put(key, srvName, "prompts/get", "", raw, s.cfg().CacheTTL)
	}
	return &PromptResult{Server: srvName, Prompt: promptName, Result: raw}, nil
}

// promptArguments merges Arguments and key=value pairs and checks them
// against the prompt's declared arguments.
func promptArguments(p *Prompt, req *PromptRequest) (map[string]string, error) {
	args, err := mergePromptArgs(p.Server, req)
	if err != nil {
		return nil, err
	}
	declared := p.Arguments()
	names := argumentNames(declared)
	var lines []string
	var candidates []string
	for k := range args {
		if !slices.Contains(names, k) {
			line := fmt.Sprintf("%s: unknown argument", k)
			if near := closest(k, names); near != "" {
				line += fmt.Sprintf(" (did you mean %s?)", near)
				candidates = append(candidates, near)
			}
			lines = append(lines, line)
		}
	}
	for _, a := range declared {
		if _, ok := args[a.Name]; a.Required && !ok {
			lines = append(lines, fmt.Sprintf("%s: required, but missing", a.Name))
		}
	}
	if len(lines) > 0 {
		slices.Sort(lines)
		e := errorf(KindUsage, p.Server, "invalid arguments for prompt %s: %s", p.Name(), strings.Join(lines, "; "))
		e.Candidates = candidates
		return nil, e.hint("see the prompt's arguments: mcpctl prompts %s", p.Name())
	}
	return args, nil
}

// mergePromptArgs merges a prompt request's Arguments and key=value pairs.
func mergePromptArgs(server string, req *PromptRequest) (map[string]string, error) {
	args := map[string]string{}
	for k, v := range req.Arguments {
		args[k] = v
	}
	seen := map[string]bool{}
	for _, pair := range req.Pairs {
		k, v, isJSON, ok := splitPair(pair)
		if !ok || isJSON {
			return nil, errorf(KindUsage, server, "argument %q is not key=value", pair).
				hint("prompt arguments are text: write key=value")
		}
		if err := givenOnce(server, seen, k); err != nil {
			return nil, err
		}
		args[k] = v
	}
	return args, nil
}

// Complete asks for completions of an argument of a prompt (ref is
// server.prompt) or of a resource template (ref is the template).
func (e *Engine) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	if req == nil {
		return nil, nilRequest("Complete", "CompleteRequest")
	}
	if err := badRequest("Complete", "CompleteRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	var s *server
	ref := &mcp.CompleteReference{}
	if strings.Contains(req.Ref, "://") || strings.Contains(req.Ref, "{") {
		ref.Type, ref.URI = "ref/resource", req.Ref
		var err error
		if s, err = e.templateServer(ctx, req.Ref, req.Server); err != nil {
			return nil, err
		}
		if sn, _, err := s.offer(); err == nil {
			if i := slices.IndexFunc(sn.templates, func(t *Template) bool { return t.URITemplate == req.Ref }); i >= 0 {
				if err := knownArguments("resource template", req.Ref, s.cfg().Name, sn.templates[i].variables(), req); err != nil {
					return nil, err
				}
			}
		}
	} else {
		srvName, promptName, err := splitName(req.Ref, "prompt")
		if err != nil {
			return nil, errorf(KindUsage, "", "%q is neither server.prompt nor a resource template", req.Ref).
				hint("complete a prompt argument: mcpctl complete SERVER.PROMPT ARG PREFIX; or a template's: mcpctl complete 'file:///{path}' path PREFIX")
		}
		if s, err = e.lookup(srvName); err != nil {
			return nil, err
		}
		ref.Type, ref.Name = "ref/prompt", promptName
		if sn, _, err := s.offer(); err == nil {
			p := sn.promptByName[promptName]
			if p == nil {
				return nil, unknownName("prompt", req.Ref, srvName, sn.names(listPrompts))
			}
			if err := knownArguments("prompt", req.Ref, srvName, argumentNames(p.Arguments()), req); err != nil {
				return nil, err
			}
		}
	}
	what := "completing " + req.Argument + " of " + req.Ref
	h, err := s.acquireWithin(ctx, req.TimeoutMs)
	if err != nil {
		return nil, deadlineError(err, s.cfg().Name, what)
	}
	s = h.s // the server a reload put in its place, perhaps
	defer h.release()
	if h.capabilities().Completions == nil {
		return nil, errorf(KindUsage, s.cfg().Name, "server %s does not offer completion", s.cfg().Name)
	}
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: req.Argument, Value: req.Value}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	defer s.askers.add(h.reader(req.Caller))()
	raw, err := h.doFor(ctx, "completion/complete", what, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.Complete(ctx, params)
	})
	if err != nil {
		return nil, deadlineError(err, s.cfg().Name, what)
	}
	return &CompleteResult{Server: s.cfg().Name, Result: raw}, nil
}

// knownArguments refuses a completion's argument, or a key of its context,
// that the prompt or template does not have.
func knownArguments(what, ref, server string, names []string, req *CompleteRequest) *Error {
	if err := knownArgument(what, ref, server, names, req.Argument); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(req.Context)) {
		if err := knownArgument(what, ref, server, names, k); err != nil {
			return err.hint("--context takes the %s's other arguments", what)
		}
	}
	return nil
}

// knownArgument refuses an argument that what (a tool, a prompt, a
// resource template) does not have, naming the one meant: a misspelt name
// would only be ignored, or find no completions.
func knownArgument(what, ref, server string, names []string, arg string) *Error {
	if slices.Contains(names, arg) {
		return nil
	}
	if len(names) == 0 {
		return errorf(KindUsage, server, "%s %s takes no arguments (given %s)", what, ref, arg)
	}
	e := errorf(KindUsage, server, "%s %s has no argument %s", what, ref, arg)
	if near := closest(arg, names); near != "" {
		e.Candidates = []string{near}
		return e.hint("did you mean %s?", near)
	}
	return e.hint("its arguments: %s", strings.Join(names, ", "))
}

func closest(name string, known []string) string {
	if c := schemas.Closest(name, known); len(c) > 0 {
		return c[0]
	}
	return ""
}
