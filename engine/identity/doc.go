// Package identity is the accounts of a webstats server (SPEC §11): accounts
// and their API keys, passwords (argon2id), server-side sign-in sessions,
// TOTP two-factor authentication with recovery codes, invitations, password
// reset links and email address proofs, the bookkeeping of periodic email
// reports, and the server's cookie secrets. It is used by httpd, its pages
// and the webstatsd command line; the engine knows an account only by the id
// that owns websites (engine.Owner).
//
// Open attaches a Service to an engine's registry seam (engine.Registry):
// its records are stored, backed up and, in cluster mode, replicated
// through the engine as named records changed in transactions, and the
// engine asks the Service what to install when a transaction applies and
// what to put back after a dry run (engine.Records). The records keep the
// kinds and ids they had when they were the engine's, so a data directory
// written before identity left the engine opens unchanged
// (TestLegacyDataDirectory). One Service per engine: Open returns the one
// attached already.
//
// Why engine/identity and not httpd/identity: identity shares the engine's
// password-hash gate (at most engine.MaxPasswordHashes argon2id hashes at
// once, engine-wide, website passwords included), its registry lock and its
// store record kinds (package snapshot), and the command line uses it
// without an HTTP server. It sits beside the engine as another user of the
// seam, not inside the HTTP layer; httpd only calls it.
//
// Lock order: the engine's life (Registry.Enter), the registry lock, then
// the sessions' own lock.
package identity
