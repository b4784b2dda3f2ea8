package engine

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// callInFlight starts a call of srv.slow (asked with ask) and returns once
// it is in flight.
func callInFlight(t *testing.T, e *Engine, caller string, ask RequestHandler) {
	t.Helper()
	go e.CallTool(ctx(t), &CallRequest{Name: "srv.slow", Caller: caller, Elicitation: ask})
	for {
		s, _ := e.lookup("srv")
		if len(s.askers.all()) > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func counting(n *atomic.Int32, answer string) RequestHandler {
	return func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		n.Add(1)
		return json.RawMessage(answer), nil
	}
}

// A -32042 belongs to the call that got it: its caller is asked, not the
// caller of another call in flight.
func TestURLRequiredAsksItsOwnCaller(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "slow", Sleep: "2s"}, {Name: "pay", URLRequired: "https://example.com/login"}}})
	var other, own atomic.Int32
	callInFlight(t, e, "", counting(&other, `{"action":"accept"}`))
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.pay", Elicitation: counting(&own, `{"action":"accept"}`)})
	if err != nil || resultText(t, res) != "url visited" || own.Load() != 1 || other.Load() != 0 {
		t.Errorf("%v %+v; own caller asked %d times, the other %d", err, res, own.Load(), other.Load())
	}
}

// With calls of different callers in flight, a question could be anyone's:
// no caller sees it (a person must not answer an agent's question), and
// it is declined.
func TestQuestionOfNoOneInParticular(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "slow", Sleep: "2s"},
		{Name: "ask", Elicit: &fakemcp.Elicit{Message: "Drop the production database?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}}})
	var person atomic.Int32
	callInFlight(t, e, "", counting(&person, `{"action":"accept","content":{}}`))
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"}) // an agent: no one to ask
	if err != nil || resultText(t, res) != `{"action":"decline"}` || person.Load() != 0 {
		t.Errorf("%v %+v; the person at the other call was asked %d times", err, res, person.Load())
	}
}

// A sampling request that could be anyone's says so, where it said only
// that no hook is set: the caller who would have answered was not asked.
func TestSamplingOfNoOneInParticularSaysWhy(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "slow", Sleep: "2s"}, {Name: "sample", Sample: "2+2?"}}})
	var other atomic.Int32
	callInFlight(t, e, "client-1", counting(&other, `{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}`))
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.sample", Caller: "client-2", Sampling: counting(&other, `{}`)})
	if err != nil || !strings.Contains(resultText(t, res), "it could be the question of any of 2 requests in flight on server srv, of different callers, so none of them was asked") || other.Load() != 0 {
		t.Errorf("%v %+v; callers asked %d times", err, res, other.Load())
	}
}

// A question that comes while a prompt is read beside a person's call may
// be the read's: the person is not asked, and it is declined.
func TestQuestionDuringAReadIsNotACallersQuestion(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25",
		Tools:   []fakemcp.Tool{{Name: "slow", Sleep: "2s"}},
		Prompts: []fakemcp.Prompt{{Name: "ask", Elicit: formAsk}}})
	var person atomic.Int32
	callInFlight(t, e, "", counting(&person, `{"action":"accept","content":{"name":"me"}}`))
	res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.ask"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Result), `{\"action\":\"decline\"}`) || person.Load() != 0 {
		t.Errorf("prompt %s; the person at the call was asked %d times", res.Result, person.Load())
	}
}

// A read of the same caller as a call (a serve client reading a resource
// while its call samples) is no other caller's: the call's caller is
// asked, as with two calls of its own. Through a session too.
func TestReadOfTheSameCallerLeavesItsQuestions(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25",
		Tools:   []fakemcp.Tool{{Name: "ask", Elicit: formAsk}},
		Prompts: []fakemcp.Prompt{{Name: "slow", Text: "x", Sleep: "2s"}}})
	for _, via := range []interface {
		GetPrompt(context.Context, *PromptRequest) (*PromptResult, error)
		CallTool(context.Context, *CallRequest) (*CallResult, error)
	}{e, serveDaemon(t, e)} {
		go via.GetPrompt(ctx(t), &PromptRequest{Name: "srv.slow", NoCache: true, Caller: "client-1"})
		for s, _ := e.lookup("srv"); len(s.askers.all()) == 0; {
			time.Sleep(5 * time.Millisecond)
		}
		var asked atomic.Int32
		res, err := via.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Caller: "client-1", Elicitation: counting(&asked, `{"action":"accept","content":{"name":"c1"}}`)})
		if err != nil || asked.Load() != 1 || !strings.Contains(resultText(t, res), `"c1"`) {
			t.Errorf("%T: %v %+v; asked %d times", via, err, res, asked.Load())
		}
		for s, _ := e.lookup("srv"); len(s.askers.all()) > 0; {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Calls of one caller (mcpctl serve's client) are one: its questions reach
// it though it has several calls in flight.
func TestCallsOfOneCaller(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "slow", Sleep: "2s"}, {Name: "ask", Elicit: formAsk}}})
	var asked atomic.Int32
	callInFlight(t, e, "client-1", counting(&asked, `{"action":"cancel"}`))
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Caller: "client-1", Elicitation: counting(&asked, `{"action":"accept","content":{"name":"c1"}}`)})
	if err != nil || asked.Load() != 1 || !strings.Contains(resultText(t, res), `"action"`) {
		t.Errorf("%v %+v; asked %d times", err, res, asked.Load())
	}
}

// A person taking their time over one call's question does not take the
// timeout of another caller's call.
func TestQuestionDoesNotHoldOthersTimeout(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "hang", Hang: true}, {Name: "ask", Elicit: formAsk}}})
	release := make(chan struct{})
	defer close(release)
	waiting := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	// The question is asked while the ask call is alone, then the other
	// call starts.
	go e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: waiting})
	time.Sleep(300 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.hang", TimeoutMs: 300})
		done <- err
	}()
	select {
	case err := <-done:
		if KindOf(err) != KindTimeout {
			t.Errorf("the other call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a call with a 300ms timeout still runs after 5s: held by another caller's question")
	}
}

// A stream whose request ended takes no more lines: a question's late
// writer must not touch a finished ResponseWriter.
func TestStreamClosed(t *testing.T) {
	w := httptest.NewRecorder()
	s := newNDJSON(w)
	if err := s.line(map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	s.close()
	if err := s.line(map[string]int{"b": 2}); err != errStreamClosed || strings.Contains(w.Body.String(), `"b"`) {
		t.Errorf("after close: %v %q", err, w.Body.String())
	}
}
