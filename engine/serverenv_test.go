package engine

import (
	"slices"
	"testing"

	"github.com/mcpctl/mcpctl/config"
)

// mcpctl's own secrets reach no server by inheritance: the values of
// inputs (MCPCTL_INPUT_*) and serve's bearer token, which every backend of
// a serve --http got (a tool that prints its environment showed it to the
// clients the token keeps out). A server's env may still give them.
func TestServerEnvKeepsMcpctlSecrets(t *testing.T) {
	env := []string{"FOO=z", "MCPCTL_SERVE_TOKEN=s3cret", "MCPCTL_INPUT_KEY=k"}
	got := serverEnv(&config.Server{Name: "a"}, env)
	if !slices.Equal(got, []string{"FOO=z"}) {
		t.Errorf("inherited: %q", got)
	}
	got = serverEnv(&config.Server{Name: "a", Env: map[string]string{"MCPCTL_SERVE_TOKEN": "given"}}, env)
	if !slices.Equal(got, []string{"FOO=z", "MCPCTL_SERVE_TOKEN=given"}) {
		t.Errorf("with env: %q", got)
	}
}
