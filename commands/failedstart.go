package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpctl/mcpctl/engine"
)

// A failedStart is what a session that ended before it was ready leaves
// behind, so that status, run after the failed up (in a CI step of its
// own, say), can still say why each server did not start.
type failedStart struct {
	EndedAt     time.Time             `json:"endedAt"`
	ConfigFiles []string              `json:"configFiles"`
	Error       *engine.Error         `json:"error"`
	Servers     []engine.ServerStatus `json:"servers"`
}

func failedStartFile(sess *engine.Session) string {
	return filepath.Join(sess.StateDir, "failed-start.json")
}

// saveFailedStart records a session's failed start; a session that
// becomes ready removes the record (clearFailedStart).
func saveFailedStart(sess *engine.Session, files []string, err *engine.Error, servers []engine.ServerStatus) error {
	data, jerr := json.Marshal(failedStart{EndedAt: time.Now(), ConfigFiles: files, Error: err, Servers: servers})
	if jerr != nil {
		return jerr
	}
	tmp := failedStartFile(sess) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, failedStartFile(sess))
}

func clearFailedStart(sess *engine.Session) {
	os.Remove(failedStartFile(sess))
}

// lastFailedStart returns the failed start the session left, when it ran
// the same config files; nil when there is none.
func lastFailedStart(sess *engine.Session, files []string) *failedStart {
	data, err := os.ReadFile(failedStartFile(sess))
	if err != nil {
		return nil
	}
	var f failedStart
	if json.Unmarshal(data, &f) != nil || f.Error == nil || !slices.Equal(f.ConfigFiles, files) {
		return nil
	}
	return &f
}
