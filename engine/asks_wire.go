package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Through the session, a question a server asks during a call travels to
// the CLI that made the call: an {"ask": Ask} line on the call's stream,
// and, for a URL-mode elicitation the server reports complete, a
// {"complete": ID} line. The CLI answers with POST /v1/answer.

// An Ask is a question from a server, sent to the caller.
type Ask struct {
	ID     string          `json:"id"`
	Server string          `json:"server"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// An Answer is the caller's answer to an [Ask]: a result, or an error the
// server is told.
type Answer struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// Code is the JSON-RPC error code the server gets with Error
	// (internal error when 0).
	Code int64 `json:"code,omitempty"`
	// NotAnswered: the caller cannot answer after all ([ErrNotAnswered]).
	NotAnswered bool `json:"notAnswered,omitempty"`
}

// waitingAsks are the questions sent to callers and not yet answered.
type waitingAsks struct {
	mu sync.Mutex
	m  map[string]chan Answer
}

func (w *waitingAsks) add() (string, chan Answer) {
	b := make([]byte, 12)
	rand.Read(b)
	id := hex.EncodeToString(b)
	ch := make(chan Answer, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]chan Answer{}
	}
	w.m[id] = ch
	w.mu.Unlock()
	return id, ch
}

func (w *waitingAsks) take(id string) chan Answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.m[id]
	delete(w.m, id)
	return ch
}

// asksOverStream sets req's handlers for the methods its caller answers,
// each asking over the call's stream.
func (d *Daemon) asksOverStream(callCtx context.Context, req *CallRequest, stream *ndjson) {
	ask := func(method string) RequestHandler {
		return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
			id, ch := d.asks.add()
			defer d.asks.take(id)
			if err := stream.line(map[string]Ask{"ask": {ID: id, Server: server, Method: method, Params: params}}); err != nil {
				return nil, err
			}
			if done := ElicitationCompleted(ctx); done != nil {
				answered := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				defer func() { close(answered); wg.Wait() }()
				go func() {
					defer wg.Done()
					select {
					case <-done:
						stream.line(map[string]string{"complete": id})
					case <-answered:
					}
				}()
			}
			select {
			case a := <-ch:
				if a.NotAnswered {
					return nil, ErrNotAnswered
				}
				if a.Error != "" {
					code := a.Code
					if code == 0 {
						code = jsonrpc.CodeInternalError
					}
					return nil, &jsonrpc.Error{Code: code, Message: a.Error}
				}
				return a.Result, nil
			case <-ctx.Done():
				// The server gave up its question: so does the CLI's prompt.
				stream.line(map[string]string{"cancel": id})
				return nil, ctx.Err()
			case <-callCtx.Done():
				return nil, callCtx.Err()
			}
		}
	}
	if slices.Contains(req.Asks, MethodSampling) {
		req.Sampling = ask(MethodSampling)
	}
	if slices.Contains(req.Asks, MethodElicitation) {
		req.Elicitation = ask(MethodElicitation)
	}
}

func (d *Daemon) serveAnswer(w http.ResponseWriter, r *http.Request) {
	var a Answer
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		writeError(w, errorf(KindUsage, "", "bad answer: %v", err))
		return
	}
	ch := d.asks.take(a.ID)
	if ch == nil {
		writeError(w, errorf(KindUsage, "", "no question %q is waiting for an answer (it was answered, or its call ended)", a.ID))
		return
	}
	ch <- a
	writeJSON(w, http.StatusOK, struct{}{})
}

// clientAsks makes a call's handlers known to the session and answers its
// questions: the client half of asksOverStream.
type clientAsks struct {
	c      *Client
	req    *CallRequest
	mu     sync.Mutex
	waits  elicitationWaits              // URL elicitations waiting for completion
	cancel map[string]context.CancelFunc // questions being answered
	wg     sync.WaitGroup
}

func (c *Client) newClientAsks(req *CallRequest) *clientAsks {
	req.Asks = nil
	if req.Sampling != nil {
		req.Asks = append(req.Asks, MethodSampling)
	}
	if req.Elicitation != nil {
		req.Asks = append(req.Asks, MethodElicitation)
	}
	return &clientAsks{c: c, req: req, cancel: map[string]context.CancelFunc{}}
}

// ask answers a question in the background, so that the call's stream
// keeps being read (its progress, a completion).
func (ca *clientAsks) ask(ctx context.Context, q Ask) {
	h := ca.req.Elicitation
	if q.Method == MethodSampling {
		h = ca.req.Sampling
	}
	var params struct {
		Mode string `json:"mode"`
	}
	json.Unmarshal(q.Params, &params)
	hctx, cancel := context.WithCancel(ctx)
	ca.mu.Lock()
	ca.cancel[q.ID] = cancel
	ca.mu.Unlock()
	stopWaiting := func() {}
	if q.Method == MethodElicitation && params.Mode == "url" {
		var ch chan struct{}
		ch, stopWaiting = ca.waits.wait(q.ID)
		hctx = context.WithValue(hctx, completeKey{}, ch)
	}
	ca.wg.Add(1)
	go func() {
		defer ca.wg.Done()
		defer stopWaiting()
		defer func() {
			ca.mu.Lock()
			delete(ca.cancel, q.ID)
			ca.mu.Unlock()
			cancel()
		}()
		a := Answer{ID: q.ID}
		var err error
		if h == nil {
			err = errorf(KindUsage, q.Server, "mcpctl did not offer to answer %s", q.Method)
		} else {
			// Recovered as in-process: the panic is not the caller's to
			// catch, on a goroutine of the Client's own. Told as net/http
			// tells a handler's panic, having no log of its own.
			a.Result, err = guard(h, hctx, q.Server, q.Method, q.Params, func(v any, stack []byte) {
				log.Printf("engine.Client: the %s handler of a call to server %s panicked: %v\n%s", q.Method, q.Server, v, stack)
			})
		}
		if err != nil {
			a.Error = err.Error()
			var werr *jsonrpc.Error
			if errors.As(err, &werr) {
				a.Code = werr.Code
			}
			a.NotAnswered = errors.Is(err, ErrNotAnswered)
		}
		if hctx.Err() == nil {
			ca.c.send(ctx, http.MethodPost, "/"+APIVersion+"/answer", &a, nil)
		}
	}()
}

// withdraw ends the answering of a question the server gave up.
func (ca *clientAsks) withdraw(id string) {
	ca.mu.Lock()
	cancel := ca.cancel[id]
	ca.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (ca *clientAsks) complete(id string) { ca.waits.done(id) }
