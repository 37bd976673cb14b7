// Package visitors is the visitor state of one salt period of a website
// (SPEC §2.2): the dense numbering of visitor hashes, each visitor's
// current visit, which chunks of it changed since they were last saved,
// and the encoding of those chunks (and the decoding of the old
// whole-period format).
//
// A Period is plain data: the engine guards it with its website's lock,
// decides when it is resident, and stores its chunks.
package visitors
