package engine

import (
	"bytes"
	"os"
	"strconv"
)

// processStopped reports whether process pid is stopped by a signal or
// traced (state T or t in /proc/PID/stat).
func processStopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which may hold spaces and ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] == 'T' || data[i+2] == 't'
}
