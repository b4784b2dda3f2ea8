package config

import (
	"strings"
	"testing"
)

// TestLogLevel: the top-level logLevel is read; a level the session does
// not know is an error naming the field.
func TestLogLevel(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse("inline", []byte(`{"logLevel": "debug", "servers": {"a": {"command": "x"}}}`), dir, nil)
	if err != nil || cfg.LogLevel != "debug" {
		t.Fatalf("LogLevel %q, %v", cfg.LogLevel, err)
	}
	cfg, err = Parse("inline", []byte(`{"servers": {"a": {"command": "x"}}}`), dir, nil)
	if err != nil || cfg.LogLevel != "" {
		t.Fatalf("LogLevel %q, %v; want none", cfg.LogLevel, err)
	}
	_, err = Parse("inline", []byte(`{"logLevel": "loud", "servers": {"a": {"command": "x"}}}`), dir, nil)
	if err == nil || !strings.Contains(err.Error(), "logLevel") {
		t.Errorf("logLevel loud: %v", err)
	}
}
