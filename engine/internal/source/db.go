package source

import (
	"strings"
	"sync"

	"github.com/Shopify/goreferrer"
)

// category is what kind of site a source is, as far as the channel rules
// need to know.
type category uint8

const (
	catNone category = iota
	catSearch
	catSocial
	catEmail
	// catVideo and catShopping are the GA4 categories the referrer database
	// does not have; the rules keep them so that a database that has them can
	// be plugged in, but no source has them today (see the package doc).
	catVideo
	catShopping
)

// entry is a known source: its display name and category.
type entry struct {
	name string
	cat  category
}

// index is the referrer database as Classify reads it. It is built once,
// from the dependency's data plus the supplement below, and never written
// after: its size is that of the database, whatever the traffic.
type index struct {
	hosts map[string]entry // referrer host → source ("www.google.co.uk" → Google)
	names map[string]entry // lower-cased source name → source ("hacker news" → Hacker News)
	alias map[string]alias // lower-cased utm_source shorthand → source ("fb" → Facebook)
}

type alias struct {
	entry
	paid bool
}

// supplement adds hosts that the referrer database, last updated in 2022,
// lacks although they now send much traffic. Each one is a host and the
// name and category it should have; keep it short: it is not the database.
var supplement = []struct {
	host, name string
	cat        category
}{
	{"x.com", "Twitter", catSocial},
	{"threads.net", "Threads", catSocial},
	{"bsky.app", "Bluesky", catSocial},
	{"t.me", "Telegram", catSocial},
	{"discord.com", "Discord", catSocial},
	{"search.brave.com", "Brave", catSearch},
	{"startpage.com", "Startpage", catSearch},
	{"qwant.com", "Qwant", catSearch},
}

// shorthands are common utm_source spellings that are not a source's name.
// They name a source of the database or of the supplement. "Paid" marks an
// ad platform's own tag: the channel treats it as paid traffic whatever the
// medium. Spellings of the form "<name or shorthand>[-_ ]ads" and "…ad" need
// no entry: Classify derives them (see paidSuffix).
var shorthands = []struct {
	key, name string
	paid      bool
}{
	{"fb", "Facebook", false},
	{"ig", "Instagram", false},
	{"insta", "Instagram", false},
	{"yt", "Youtube", false},
	{"tw", "Twitter", false},
	{"x", "Twitter", false},
	{"li", "LinkedIn", false},
	{"hn", "Hacker News", false},
	{"adwords", "Google", true},
}

// db returns the index, building it on first use.
var db = sync.OnceValue(buildIndex)

func buildIndex() *index {
	rules := goreferrer.DefaultRules.DomainRules
	ix := &index{
		hosts: make(map[string]entry, len(rules)+len(supplement)),
		names: make(map[string]entry, 512),
		alias: make(map[string]alias, len(shorthands)),
	}
	for key, r := range rules {
		c := fromReferrerType(r.Type)
		if c == catNone || r.Label == "" {
			continue
		}
		name := ix.addName(r.Label, c)
		// Keys with a path ("google.com/products") need the referrer's path,
		// which a visit does not keep.
		if strings.IndexByte(key, '/') < 0 {
			ix.hosts[strings.ToLower(key)] = entry{name, c}
		}
	}
	for _, s := range supplement {
		ix.hosts[s.host] = entry{ix.addName(s.name, s.cat), s.cat}
	}
	for _, s := range shorthands {
		e, ok := ix.names[strings.ToLower(s.name)]
		if !ok {
			panic("source: shorthand " + s.key + " names unknown source " + s.name)
		}
		ix.alias[s.key] = alias{e, s.paid}
	}
	return ix
}

// addName records a source name and returns the spelling kept for it. A name
// the database files under two categories (a few portals are both a search
// engine and a web mail) keeps the first of search, social, email.
func (ix *index) addName(name string, c category) string {
	k := strings.ToLower(name)
	if old, ok := ix.names[k]; ok {
		if old.cat <= c {
			return old.name
		}
		name = old.name
	}
	ix.names[k] = entry{name, c}
	return name
}

func fromReferrerType(t goreferrer.ReferrerType) category {
	switch t {
	case goreferrer.Search:
		return catSearch
	case goreferrer.Social:
		return catSocial
	case goreferrer.Email:
		return catEmail
	}
	return catNone
}

// maxParentLookups bounds how many parent domains of a referrer host are
// looked up ("a.b.c.google.com" → "b.c.google.com" → … → "google.com").
const maxParentLookups = 8

// host finds the source of a referrer host: the host itself, then with
// "www." added, then its parent domains down to two labels.
func (ix *index) host(h string) (entry, bool) {
	if e, ok := ix.hosts[h]; ok {
		return e, true
	}
	if !strings.HasPrefix(h, "www.") && len(h) <= 255 {
		var buf [4 + 255]byte
		k := append(append(buf[:0], "www."...), h...)
		if e, ok := ix.hosts[string(k)]; ok {
			return e, true
		}
	}
	for range maxParentLookups {
		i := strings.IndexByte(h, '.')
		if i < 0 || strings.IndexByte(h[i+1:], '.') < 0 {
			break
		}
		h = h[i+1:]
		if e, ok := ix.hosts[h]; ok {
			return e, true
		}
	}
	return entry{}, false
}
