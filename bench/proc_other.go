//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child with its
// parent. The run's own exits kill the servers it started.
func dieWithParent(cmd *exec.Cmd) {}
