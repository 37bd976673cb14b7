// Package query is the Plausible Stats API v2 query model: it parses,
// validates and resolves a query against what QuerySite tells of its
// website (its time zone, goals and "now"), and reads no storage or engine
// state.
//
// The engine (package engine) answers a ResolvedQuery; a library caller
// builds or parses a Query, usually through engine's aliases (engine.Query,
// engine.ParseQuery), and the HTTP API answers a *QueryError as 400.
//
// Plausible's request is SPEC §10.2 and plausible-api.md §1–6. Plausible
// validates in three stages and so do ParseQuery and Validate:
//
//  1. the JSON schema (every violation, JSON-pointer prefixed, joined with
//     "\n" in the order ex_json_schema reports them: known properties in
//     alphabetical order, then unknown keys, then missing required keys);
//  2. the parser (the first error only: date range values, clause types,
//     country codes);
//  3. the query builder (the first error only: order_by, filter placement,
//     behavioural filters, goals, metric/dimension combinations, include).
//
// Messages are Plausible's words; where webstats adds a bound Plausible does
// not have (the Max* constants) the message is ours and QueryError.Limit
// names the bound.
package query
