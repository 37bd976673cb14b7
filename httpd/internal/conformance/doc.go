// Package conformance holds no code: its tests run Plausible's own clients,
// installed unchanged from npm (testdata/package.json and package-lock.json; see
// README.md, "Conformance with real clients"), against the real webstatsd
// binary, and check every number against a reference computed from what the
// clients were made to send.
//
// Install the clients with
//
//	npm ci --prefix httpd/internal/conformance/testdata
//
// Without them the tests are skipped, except under CI=true, where they fail.
package conformance
