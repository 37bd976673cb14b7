// Package export gives the hits of an export (SPEC §14) what the
// segments do not keep of them and the day's bucket does: each pageview's
// page with its query, and a referrer's "www.", so that what an export
// gives back is counted again as it was.
package export
