// Package export makes the hits of an export (SPEC §14) from a day's
// segments: each pageview and event (Hit) with its visit's attributes
// and an opaque visitor id, and what the segments do not keep of them
// and the day's bucket does (Hints): each pageview's page with its query,
// and a referrer's "www.", so that what an export gives back is counted
// again as it was.
package export
