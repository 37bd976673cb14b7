package pages

import (
	"strings"

	"github.com/webstats/webstats/engine"
)

// Referrer groups: see "Referrer groups" in the package documentation.
const (
	groupSearch = "Search engines"
	groupSocial = "Social networks"
)

// searchHosts are search engines' hosts; their subdomains count too.
var searchHosts = []string{
	"bing.com", "duckduckgo.com", "search.yahoo.com", "ecosia.org", "ya.ru",
	"baidu.com", "search.brave.com", "startpage.com", "qwant.com", "kagi.com",
	"search.naver.com", "seznam.cz", "sogou.com", "so.com", "ask.com",
	"search.aol.com", "yep.com", "mojeek.com", "presearch.com", "metager.org",
	"swisscows.com", "search.lilo.org", "petalsearch.com", "you.com",
}

// searchBrands are search engines known under many country domains
// (google.com, google.co.uk, yandex.ru …).
var searchBrands = []string{"google", "yandex", "yahoo", "bing", "baidu", "ecosia"}

// socialHosts are social networks' hosts; their subdomains count too
// (m.facebook.com, l.instagram.com, old.reddit.com …).
var socialHosts = []string{
	"facebook.com", "fb.com", "fb.me", "t.co", "twitter.com", "x.com",
	"linkedin.com", "lnkd.in", "reddit.com", "news.ycombinator.com",
	"instagram.com", "youtube.com", "youtu.be", "pin.it", "tiktok.com",
	"threads.net", "threads.com", "bsky.app", "mastodon.social", "tumblr.com",
	"vk.com", "ok.ru", "weibo.com", "quora.com", "discord.com", "t.me",
	"lobste.rs", "snapchat.com", "xing.com", "medium.com",
}

// socialBrands are social networks known under many country domains.
var socialBrands = []string{"pinterest", "facebook", "linkedin"}

// referrerGroup returns the group of a referring host, or "".
func referrerGroup(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	h = strings.TrimPrefix(h, "www.")
	switch {
	case h == "":
		return ""
	case listed(h, searchHosts) || branded(h, searchBrands):
		return groupSearch
	case listed(h, socialHosts) || branded(h, socialBrands):
		return groupSocial
	}
	return ""
}

// listed reports whether h is one of hosts or a subdomain of one.
func listed(h string, hosts []string) bool {
	for _, s := range hosts {
		if h == s || (len(h) > len(s) && strings.HasSuffix(h, s) && h[len(h)-len(s)-1] == '.') {
			return true
		}
	}
	return false
}

// branded reports whether h is brand.tld or brand.sld.tld for one of brands,
// with suffix labels of two or three letters (google.de, google.co.uk,
// google.com.br).
func branded(h string, brands []string) bool {
	labels := strings.Split(h, ".")
	if len(labels) < 2 || len(labels) > 3 {
		return false
	}
	found := false
	for _, b := range brands {
		if labels[0] == b {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	for _, l := range labels[1:] {
		if len(l) < 2 || len(l) > 3 {
			return false
		}
		for i := 0; i < len(l); i++ {
			if l[i] < 'a' || l[i] > 'z' {
				return false
			}
		}
	}
	return true
}

// group is a summary row of referrers.
type group struct {
	Name    string
	Count   uint64
	Sources int    // referrers summed
	Hosts   string // the largest ones, for the row's title
}

// referrerGroups sums rows by group, in a fixed order (search, social),
// leaving out empty groups.
func referrerGroups(rows []engine.Row) []group {
	gs := []group{{Name: groupSearch}, {Name: groupSocial}}
	var hosts [2][]string
	for _, r := range rows {
		i := -1
		switch referrerGroup(r.Value) {
		case groupSearch:
			i = 0
		case groupSocial:
			i = 1
		default:
			continue
		}
		gs[i].Count += r.Count
		gs[i].Sources++
		if len(hosts[i]) < 8 {
			hosts[i] = append(hosts[i], r.Value)
		}
	}
	out := gs[:0]
	for i, g := range gs {
		if g.Count > 0 {
			g.Hosts = strings.Join(hosts[i], ", ")
			if g.Sources > len(hosts[i]) {
				g.Hosts += ", …"
			}
			out = append(out, g)
		}
	}
	return out
}
