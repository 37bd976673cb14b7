package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when the bench exits,
// whatever ends it: a server outlives no bench.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
