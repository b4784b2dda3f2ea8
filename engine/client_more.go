package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// Prompts lists prompts: filter is "", a server, or server.prompt. Stable.
func (c *Client) Prompts(ctx context.Context, filter string) ([]*Prompt, error) {
	var out []*Prompt
	err := c.send(ctx, http.MethodGet, "/v1/prompts?filter="+url.QueryEscape(filter), nil, &out)
	return out, err // out with an error: a partial list (see Engine.Tools)
}

// GetPrompt gets a prompt through the session. Stable.
func (c *Client) GetPrompt(ctx context.Context, req *PromptRequest) (*PromptResult, error) {
	if req == nil {
		return nil, nilRequest("GetPrompt", "PromptRequest")
	}
	var out PromptResult
	server, _, _ := SplitName(req.Name)
	return resultOf(&out, deadlineError(c.send(ctx, http.MethodPost, "/v1/prompts/get", req, &out), server, "prompt "+req.Name))
}

// resultOf is out, or nil with an error, as the engine's methods give it.
func resultOf[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Resources lists resources and templates of every server, or of one. Stable.
func (c *Client) Resources(ctx context.Context, server string) (*Resources, error) {
	var out *Resources
	err := c.send(ctx, http.MethodGet, "/v1/resources?server="+url.QueryEscape(server), nil, &out)
	return out, err // out with an error: a partial list (see Engine.Tools)
}

// ReadResource reads a resource through the session. Stable.
func (c *Client) ReadResource(ctx context.Context, req *ResourceRequest) (*ResourceResult, error) {
	if req == nil {
		return nil, nilRequest("ReadResource", "ResourceRequest")
	}
	var out ResourceResult
	return resultOf(&out, deadlineError(c.send(ctx, http.MethodPost, "/v1/resources/read", req, &out), req.Server, "reading "+req.URI))
}

// Complete asks for completions through the session. Stable.
func (c *Client) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	if req == nil {
		return nil, nilRequest("Complete", "CompleteRequest")
	}
	var out CompleteResult
	return resultOf(&out, deadlineError(c.send(ctx, http.MethodPost, "/v1/complete", req, &out), req.Server, "completing "+req.Argument+" of "+req.Ref))
}

// Redact hides in text the secrets of the session's servers, as
// [Engine.Redact] does. Stable.
func (c *Client) Redact(ctx context.Context, text string) (string, error) {
	var out redactText
	if err := c.send(ctx, http.MethodPost, "/v1/redact", &redactText{Text: text}, &out); err != nil {
		return "", err
	}
	return out.Text, nil
}

// Inspect reports what every server, or one, declared. Stable.
func (c *Client) Inspect(ctx context.Context, server string) ([]*Inspection, error) {
	var out []*Inspection
	err := c.send(ctx, http.MethodGet, "/v1/inspect?server="+url.QueryEscape(server), nil, &out)
	return out, err // out with an error: a partial list (see Engine.Tools)
}

// Listed is the session's [Engine.Listed]: what its servers have listed,
// starting none.
func (c *Client) Listed(ctx context.Context) ([]*Inspection, error) {
	var out []*Inspection
	err := c.send(ctx, http.MethodGet, "/v1/listed", nil, &out)
	return out, err
}

// Metrics reports the session's request figures. Stable.
func (c *Client) Metrics(ctx context.Context) ([]ServerMetrics, error) {
	var out []ServerMetrics
	err := c.send(ctx, http.MethodGet, "/v1/metrics", nil, &out)
	return out, err
}

// Reload asks the session to read its config again and apply it; req, which
// may be nil, gives it input values.
func (c *Client) Reload(ctx context.Context, req *ReloadRequest) (*ReloadResult, error) {
	if req == nil {
		req = &ReloadRequest{}
	}
	var res ReloadResult
	if err := c.send(ctx, http.MethodPost, "/"+APIVersion+"/reload", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Watch follows the session's events as [Engine.Watch] does. It returns
// nil when the session ends under it (mcpctl down) as when ctx ends:
// ctx.Err() tells them apart. Stable.
func (c *Client) Watch(ctx context.Context, req *WatchRequest, fn func(Event) error) error {
	if fn == nil {
		return errorf(KindUsage, "", "Watch was called with a nil func(Event) error").hint("pass the function each event is handed to")
	}
	if req == nil {
		req = &WatchRequest{}
	}
	q := url.Values{"server": req.Filter.Servers, "type": req.Filter.Types, "subscribe": req.Subscribe}
	if req.Filter.Stderr {
		q.Set("stderr", "1")
	}
	if req.SubscribeServer != "" {
		q.Set("subscribeServer", req.SubscribeServer)
	}
	if req.LogLevel != "" {
		q.Set("logLevel", req.LogLevel)
	}
	err := c.stream(ctx, http.MethodGet, "/v1/events?"+q.Encode(), nil, func(line []byte) error {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		return fn(ev)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// callStreaming is CallTool with progress lines before the result.
func (c *Client) callStreaming(ctx context.Context, req *CallRequest) (*CallResult, error) {
	var res *CallResult
	// Questions still being answered end with the call.
	ctx, cancel := context.WithCancel(ctx)
	asks := c.newClientAsks(req)
	defer asks.wg.Wait()
	defer cancel()
	err := c.stream(ctx, http.MethodPost, "/v1/tools/call", req, func(line []byte) error {
		// The result, the last line, is read as CallTool reads it, from
		// a copy: line is the scanner's, read into again.
		if rest, ok := bytes.CutPrefix(line, []byte(`{"result":`)); ok && bytes.HasSuffix(rest, []byte("}")) {
			r, err := parseCallResult(bytes.Clone(rest[:len(rest)-1]))
			if err != nil {
				return err
			}
			res = r
			return nil
		}
		var msg struct {
			Progress *Progress   `json:"progress"`
			Ask      *Ask        `json:"ask"`
			Complete string      `json:"complete"`
			Cancel   string      `json:"cancel"`
			Result   *CallResult `json:"result"`
			wireError
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return err
		}

		switch {
		case msg.Ask != nil:
			asks.ask(ctx, *msg.Ask)
		case msg.Complete != "":
			asks.complete(msg.Complete)
		case msg.Cancel != "":
			asks.withdraw(msg.Cancel)
		case msg.Progress != nil:
			if req.OnProgress != nil {
				req.OnProgress(*msg.Progress)
			}
		case msg.Error != nil:
			return msg.wireError.error()
		case msg.Result != nil:
			res = msg.Result
		}
		return nil
	})
	if err == nil && res == nil {
		// The stream ended: by the caller giving up (Ctrl-C), or by the
		// session.
		if err = ctx.Err(); err == nil {
			err = errorf(KindUnavailable, "", "the session ended the call without a result")
		}
	}
	return res, err
}

// stream makes a request whose answer is JSON lines, and hands each line to
// onLine until the stream ends, ctx ends, or onLine fails. A line
// {"error": ...} ends the stream with that error.
func (c *Client) stream(ctx context.Context, method, path string, body any, onLine func([]byte) error) error {
	resp, err := c.do(ctx, method, path, body, ndjsonType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), maxMessage)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"error":`)) {
			var wire wireError
			if json.Unmarshal(line, &wire) == nil && wire.Error != nil {
				return wire.error()
			}
		}
		if err := onLine(line); err != nil {
			return err
		}
	}
	if cb, ok := resp.Body.(*cancellingBody); ok && ctx.Err() == nil {
		if e := cb.stopped(); e != nil {
			return e
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		return errorf(KindUnavailable, "", "the session stopped answering: %v", err).wrap(err)
	}
	return nil
}

// Servers starts, stops or restarts servers of the session by hand: act is
// "start", "stop" or "restart". It returns their status after.
func (c *Client) Servers(ctx context.Context, act string, names ...string) ([]ServerStatus, error) {
	if act != "start" && act != "stop" && act != "restart" {
		return nil, errorf(KindUsage, "", "Servers was called with act %q", act).hint(`act is "start", "stop" or "restart"`)
	}
	var out []ServerStatus
	// Not "return out, c.send(…, &out)": whether out is read before or
	// after the call is not specified.
	err := c.send(ctx, http.MethodPost, "/"+APIVersion+"/servers/"+act, &ServersRequest{Servers: names}, &out)
	return out, err
}
