package engine

import (
	"bytes"
	"os"
	"strconv"
)

// processState is process pid's state letter in /proc/PID/stat (T:
// stopped by a signal, t: stopped while traced), or 0 when unknown.
func processState(pid int) byte {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The state follows the command name, which may hold spaces and ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}
