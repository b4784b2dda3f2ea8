package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/schemas"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v3"
)

const sdkModule = "github.com/modelcontextprotocol/go-sdk"

func newVersionCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "Show the versions of mcpctl, its MCP SDK and the MCP protocol",
		Description: `Prints mcpctl's version, the version of the MCP Go SDK it was built with,
the newest MCP protocol version that SDK speaks, the versions it accepts,
and the versions a server's "protocolVersion" may ask for in the config.

  mcpctl version
  mcpctl version --jq .sdk.version`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runVersion(env)
		},
	}
}

// A versionInfo is what `mcpctl version` prints.
type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	SDK     struct {
		Module  string `json:"module"`
		Version string `json:"version"`
	} `json:"sdk"`
	Protocol struct {
		// Latest is the version the SDK asks for unless the config says.
		Latest string `json:"latest"`
		// Supported are the versions the SDK accepts from a server.
		Supported []string `json:"supported"`
		// Config are the values a server's protocolVersion may take.
		Config []string `json:"config"`
	} `json:"protocol"`
}

func runVersion(env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	v := versionInfo{Version: engine.Version(), Go: "unknown"}
	v.SDK.Module, v.SDK.Version = sdkModule, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Go = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == sdkModule {
				if d.Replace != nil {
					d = d.Replace
				}
				v.SDK.Version = d.Version
			}
		}
	}
	v.Protocol.Supported = mcp.SupportedProtocolVersions()
	if len(v.Protocol.Supported) > 0 {
		v.Protocol.Latest = v.Protocol.Supported[0]
	}
	v.Protocol.Config = configProtocolVersions()
	return p.Print(v, func(w io.Writer) error {
		fmt.Fprintf(w, "mcpctl %s (%s)\n", v.Version, v.Go)
		fmt.Fprintf(w, "MCP Go SDK %s\n", v.SDK.Version)
		fmt.Fprintf(w, "MCP protocol %s (latest); accepts %s\n", v.Protocol.Latest, strings.Join(v.Protocol.Supported, ", "))
		fmt.Fprintf(w, "protocolVersion in the config: %s\n", strings.Join(v.Protocol.Config, ", "))
		return nil
	})
}

// configProtocolVersions returns the protocolVersion enum of the config
// schema: what a server's protocolVersion may say.
func configProtocolVersions() []string {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if json.Unmarshal(schemas.ConfigJSON, &doc) != nil {
		return nil
	}
	for _, d := range doc.Defs {
		if e := d.Properties["protocolVersion"].Enum; len(e) > 0 {
			return e
		}
	}
	return nil
}
