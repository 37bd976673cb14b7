// Package wire reads the engine's binary encodings: varints, strings
// (interned when they repeat) and counts bounded by the bytes left.
package wire
