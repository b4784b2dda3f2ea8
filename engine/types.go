package engine

import (
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
)

// A ServerStatus is one server as [Engine.Status] reports it.
type ServerStatus struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Since is when the server entered its current state.
	Since time.Time `json:"since,omitzero"`
	PID   int       `json:"pid,omitempty"`
	// ReadyAt is when the server last became ready; UptimeSeconds counts
	// from it. StartupSeconds is how long that start took.
	ReadyAt         *time.Time `json:"readyAt,omitempty"`
	UptimeSeconds   float64    `json:"uptimeSeconds,omitempty"`
	StartupSeconds  float64    `json:"startupSeconds,omitempty"`
	Tools           int        `json:"tools"`
	ServerInfo      *Impl      `json:"serverInfo,omitempty"`
	ProtocolVersion string     `json:"protocolVersion,omitempty"`
	LastError       string     `json:"lastError,omitempty"`
}

// An Impl names an MCP implementation (a server's serverInfo).
type Impl struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// SessionInfo describes a running session.
type SessionInfo struct {
	Name      string    `json:"name"`
	PID       int       `json:"pid"`
	Socket    string    `json:"socket"`
	Config    string    `json:"config"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"startedAt"`
}

// Status is the state of a session and its servers. Session is nil when no
// session runs.
type Status struct {
	Session *SessionInfo   `json:"session"`
	Servers []ServerStatus `json:"servers"`
}

// A CallRequest asks for one tool call.
type CallRequest struct {
	// Name is server.tool.
	Name string `json:"name"`
	// Arguments is a JSON object, or empty.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Pairs are key=value (typed by the tool's input schema: a string
	// property keeps "000123" a string) and key:=json arguments, applied
	// over Arguments in order.
	Pairs []string `json:"pairs,omitempty"`
	// TimeoutMs bounds the call; 0 means the engine's request timeout.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

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
