// Package segments is the engine's segments store (SPEC §10.1): a
// website's visit and hit rows of one day in dictionary-encoded columns,
// their binary encoding and sealed parts, and what queries keep of them.
package segments
