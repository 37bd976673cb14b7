// Package website is a website's record and settings: its fields, the
// validation and normalisation of a create or update request into the
// record, the settings read from it (time zone, excluded parameters and
// IP ranges), and the paging of a list of websites.
//
// It is pure: it holds no engine state and does no I/O. Package engine
// aliases its public types (engine.Website, engine.WebsiteInput,
// engine.WebsiteQuery, engine.WebsitePage) and keeps what locks, stores
// and replicates a record: the registry, the domain index, the password
// hashing gate. The record's JSON is what the store keeps
// (snapshot.KindWebsite): its field names and tags must not change.
package website
