// Package config is an Engine's configuration: the Options it opens with,
// their defaults and checks (Fill), and the interfaces through which a
// cluster node is given its shared log and partitions (Cluster,
// Partitioner).
//
// Package engine aliases the public types (engine.Options, engine.Cluster,
// engine.LogMessage, engine.Partitioner): an embedder writes
// engine.Options{...} and implements engine.Cluster as before. The field
// and method comments here are the documentation of those aliases; names
// such as Track, ErrLogFailed or Metrics are the engine's.
package config
