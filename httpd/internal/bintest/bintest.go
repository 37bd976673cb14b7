// Package bintest builds the webstatsd binary once per test process, for
// the tests that run the real binary (httpd/cmd/webstatsd's hostile and
// journey tests, the conformance suite).
package bintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The binary, built once for the process's tests (Webstatsd).
var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Webstatsd builds httpd/cmd/webstatsd once (go build reuses the test's
// compiled packages) and returns its path; without a go tool the test is
// skipped. The binary lives until Remove.
func Webstatsd(t testing.TB) string {
	t.Helper()
	goTool, lookErr := exec.LookPath("go")
	if lookErr != nil {
		t.Skip("no go tool to build webstatsd with")
	}
	once.Do(func() {
		dir, err = os.MkdirTemp("", "webstatsd-bin-")
		if err != nil {
			return
		}
		path = filepath.Join(dir, "webstatsd")
		cmd := exec.Command(goTool, "build", "-o", path, "github.com/webstats/webstats/httpd/cmd/webstatsd")
		if out, buildErr := cmd.CombinedOutput(); buildErr != nil {
			err = fmt.Errorf("go build webstatsd: %v\n%s", buildErr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Remove deletes the binary Webstatsd built, if any: call it from
// TestMain once the tests have run.
func Remove() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
