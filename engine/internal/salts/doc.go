// Package salts is the salts of visitor hashes (SPEC §2.2), one a salt
// period: the periods' days, each period's salt made once while the
// callers that need it wait, and the salted hash that makes a visitor of
// a hit.
//
// Making a salt (drawing, agreeing on it with a cluster, storing it) is
// the caller's: Box.Get calls the function it is given, once a period.
package salts
