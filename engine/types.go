package engine

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"sync"
	"time"
)

// A State is where a server is in its lifecycle:
// stopped → starting → ready ⇄ degraded → unavailable, plus stopping.
type State string

const (
	StateStopped     State = "stopped"
	StateStarting    State = "starting"
	StateReady       State = "ready"
	StateDegraded    State = "degraded"
	StateUnavailable State = "unavailable"
	StateStopping    State = "stopping"
	// StateDisabled: the config disables the server; it never starts.
	StateDisabled State = "disabled"
)

// A ServerStatus is one server as [Engine.Status] reports it.
type ServerStatus struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Since is when the server entered its current state.
	Since time.Time `json:"since,omitzero"`
	PID   int       `json:"pid,omitempty"`
	// ReadyAt is when the server last became ready; UptimeSeconds counts
	// from it. StartupSeconds is how long that start took. All three are
	// there when the server is ready or degraded (the seconds 0.001 at
	// least), and only then.
	ReadyAt         *time.Time `json:"readyAt,omitempty"`
	UptimeSeconds   float64    `json:"uptimeSeconds,omitempty"`
	StartupSeconds  float64    `json:"startupSeconds,omitempty"`
	Tools           int        `json:"tools"`
	ServerInfo      *Impl      `json:"serverInfo,omitempty"`
	ProtocolVersion string     `json:"protocolVersion,omitempty"`
	LastError       string     `json:"lastError,omitempty"`
	// EditError says why the last reload could not apply an edit of the
	// server (a command not found, a cwd missing): it runs on with its
	// settings from before, until an edit mends it or undoes it.
	EditError string `json:"editError,omitempty"`
	// Activation is when the server runs, unless eager: lazy, manual or
	// transient.
	Activation string `json:"activation,omitempty"`
	// Restarts counts the restarts of the on-failure policy since the
	// server last ran steadily; RestartAt is when the next is due.
	Restarts  int        `json:"restarts"`
	RestartAt *time.Time `json:"restartAt,omitempty"`
	// Failures counts the failed requests in a row (a degraded server).
	Failures int `json:"failures"`
	// LastSuccessAt and LastFailureAt are when a request to the server
	// (a health check ping too) last succeeded and last failed in a way
	// that counts toward failureThreshold, over all its runs; a caller's
	// giving up is neither.
	LastSuccessAt *time.Time `json:"lastSuccessAt,omitempty"`
	LastFailureAt *time.Time `json:"lastFailureAt,omitempty"`
	// StoppedByHand: stopped with mcpctl stop (Engine.Stop), it stays
	// stopped until started by hand.
	StoppedByHand bool `json:"stoppedByHand,omitempty"`
}

// An Impl names an MCP implementation (a server's serverInfo).
type Impl struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// SessionInfo describes a running session.
type SessionInfo struct {
	Name   string `json:"name"`
	PID    int    `json:"pid"`
	Socket string `json:"socket"`
	// Config is the (first) config file; ConfigFiles are all of them.
	Config      string    `json:"config"`
	ConfigFiles []string  `json:"configFiles"`
	Version     string    `json:"version"`
	StartedAt   time.Time `json:"startedAt"`
	// Ready is set once the session has started its servers.
	Ready bool `json:"ready"`
	// Stopping is set once the session is ending (mcpctl down, a signal):
	// it answers until its servers are stopped, then it is gone.
	Stopping bool `json:"stopping,omitempty"`
	// TTLSeconds, when set, is how long the session may go without a
	// request before it stops itself (mcpctl up --ttl).
	TTLSeconds float64 `json:"ttlSeconds,omitempty"`
}

// Status is the state of a session and its servers. Session is nil when no
// session runs.
type Status struct {
	Session *SessionInfo   `json:"session"`
	Servers []ServerStatus `json:"servers"`
	// ConfigError says why the session could not reload its config after
	// an edit; it runs the config it had until the file is fixed.
	ConfigError *Error `json:"configError,omitempty"`
}

// A CallRequest asks for one tool call.
type CallRequest struct {
	// Name is server.tool.
	Name string `json:"name"`
	// Arguments is a JSON object, or empty (null counts as empty).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Pairs are key=value (typed by the tool's input schema: a string
	// property keeps "000123" a string) and key:=json arguments, applied
	// over Arguments in order.
	Pairs []string `json:"pairs,omitempty"`
	// TimeoutMs is how long the call may go without an answer; 0 means
	// the engine's request timeout. Each progress notification starts it
	// again (up to 10 times the timeout in all), time spent answering the
	// server's questions (Sampling, Elicitation, hooks) does not count,
	// and a tool annotated idempotentHint is tried up to 3 times unless
	// TimeoutMs or Retry is set. For a call that runs as a task, a change
	// of the task's status or status message starts it again too (polling
	// that finds the task as it was does not); time spent answering the
	// server's questions during a task counts. Set, it also bounds the
	// wait for a start of the server the call sets off (one that starts
	// on use), which then goes on; the call gets its timeout afresh once
	// the server is up.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Task runs a tool whose execution.taskSupport is "optional" as a
	// task. Tools that require tasks always run as one.
	Task bool `json:"task,omitempty"`
	// Retry is how often a call that timed out, or whose server died and
	// is being restarted, is tried again. Calls are not retried by
	// default, except calls of tools annotated idempotentHint: true,
	// which are tried up to 3 times.
	Retry int `json:"retry,omitempty"`
	// OnProgress, when set, receives the call's progress notifications
	// and, for a task, its status, in order and never after the call
	// returns. Engine.CallTool calls it on a goroutine of its own (it may
	// block, or call the engine; while it is slow, older notifications
	// beyond 256 are dropped, a task's statuses kept; once the call's
	// context ends, or its time runs out, those still queued are dropped
	// and only the one under way is waited for) and raises a panic of it again; Client.CallTool
	// calls it on the caller's goroutine, as the call's answer is read.
	OnProgress func(Progress) `json:"-"`
	// Sampling and Elicitation, when set, answer the sampling/createMessage
	// and elicitation/create requests the server sends while it serves
	// this call, before the engine's own hooks are asked. Through a
	// session they are asked over the call's stream.
	Sampling    RequestHandler `json:"-"`
	Elicitation RequestHandler `json:"-"`
	// Asks lists the methods the caller answers (MethodSampling,
	// MethodElicitation); the session client fills it in.
	Asks []string `json:"asks,omitempty"`
	// Caller names who makes the call, for calls made together by one
	// client (mcpctl serve's). MCP does not say which call a question of
	// the server belongs to, so a caller is asked only when every call in
	// flight on the server is theirs; "" means this call alone.
	Caller string `json:"caller,omitempty"`
}

// The server-to-client requests a caller may answer.
const (
	MethodSampling    = "sampling/createMessage"
	MethodElicitation = "elicitation/create"
)

// Progress is how far a request got, as the server reported it.
type Progress struct {
	Progress float64 `json:"progress"` // 0 too: a progress of 0 is news
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Status is the status of a task (working, input_required,
	// completed, failed, cancelled), for calls that run as tasks.
	Status string `json:"status,omitempty"`
	// TaskID identifies the task, for calls that run as tasks.
	TaskID string `json:"taskId,omitempty"`
}

// A PromptRequest asks for one prompt.
type PromptRequest struct {
	// Name is server.prompt.
	Name string `json:"name"`
	// Arguments and key=value Pairs (applied over them) are the prompt's
	// arguments; they are checked against the ones it declares.
	Arguments map[string]string `json:"arguments,omitempty"`
	Pairs     []string          `json:"pairs,omitempty"`
	// NoCache skips the cache (the fresh answer is still cached).
	NoCache bool `json:"noCache,omitempty"`
	// TimeoutMs is as [CallRequest]'s, the wait for a start included.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Caller names who makes the request, as CallRequest.Caller does: a
	// question the server asks while it is in flight may still be put to
	// the same caller's calls.
	Caller string `json:"caller,omitempty"`
}

// A PromptResult is a prompts/get result as the server sent it. A cached
// one carries _meta["mcpctl/cache"] with its age.
type PromptResult struct {
	Server string          `json:"server"`
	Prompt string          `json:"prompt"`
	Result json.RawMessage `json:"result"`
	Cached bool            `json:"cached,omitempty"`
}

// A ResourceRequest asks to read one resource.
type ResourceRequest struct {
	URI string `json:"uri"`
	// Server names the server to ask; empty routes by URI.
	Server  string `json:"server,omitempty"`
	NoCache bool   `json:"noCache,omitempty"`
	// TimeoutMs is as [CallRequest]'s, the wait for a start included.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Caller names who makes the request, as CallRequest.Caller does: a
	// question the server asks while it is in flight may still be put to
	// the same caller's calls.
	Caller string `json:"caller,omitempty"`
}

// A ResourceResult is a resources/read result as the server sent it.
type ResourceResult struct {
	Server string          `json:"server"`
	URI    string          `json:"uri"`
	Result json.RawMessage `json:"result"`
	Cached bool            `json:"cached,omitempty"`
}

// A CompleteRequest asks for completions of one argument.
type CompleteRequest struct {
	// Ref is server.prompt, or a resource template (file:///{path}).
	Ref string `json:"ref"`
	// Server names the server for a template several servers have.
	Server   string `json:"server,omitempty"`
	Argument string `json:"argument"`
	Value    string `json:"value"`
	// Context holds arguments already chosen.
	Context map[string]string `json:"context,omitempty"`
	// TimeoutMs is as [CallRequest]'s, the wait for a start included.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Caller names who makes the request, as CallRequest.Caller does: a
	// question the server asks while it is in flight may still be put to
	// the same caller's calls.
	Caller string `json:"caller,omitempty"`
}

// A CompleteResult is a completion/complete result as the server sent it.
type CompleteResult struct {
	Server string          `json:"server"`
	Result json.RawMessage `json:"result"`
}

// A RequestHandler answers a request a server sends to the client
// (sampling/createMessage, elicitation/create): request is its params as
// JSON, and the answer is the result as JSON. ctx ends when the request
// is cancelled or the server stops; a stop waits a second at most for a
// handler that does not watch it, then leaves it to return in its own
// time. A handler that panics is recovered: the server is answered with an
// error saying so, and the panic is logged (Options.Logger); it does not
// reach the caller, whose call goes on.
type RequestHandler func(ctx context.Context, server string, request json.RawMessage) (json.RawMessage, error)

// A CallResult is a tool's answer, kept exactly as the server sent it:
// every content block, structuredContent and _meta.
type CallResult struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Result is the JSON-RPC result object of tools/call.
	Result json.RawMessage `json:"result"`
	// IsError mirrors result.isError: the tool ran and reported failure.
	IsError bool `json:"isError"`
}

// Version is this build's version: the module version for released builds,
// "devel" otherwise.
var Version = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
})

// APIVersion is the version of the session's HTTP API; paths start with it.
const APIVersion = "v1"
