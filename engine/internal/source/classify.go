package source

import "strings"

// The channel names, as the API shows them (plausible-api.md visit:channel).
const (
	ChannelCrossNetwork    = "Cross-network"
	ChannelPaidShopping    = "Paid Shopping"
	ChannelPaidSearch      = "Paid Search"
	ChannelPaidSocial      = "Paid Social"
	ChannelPaidVideo       = "Paid Video"
	ChannelDisplay         = "Display"
	ChannelPaidOther       = "Paid Other"
	ChannelOrganicShopping = "Organic Shopping"
	ChannelOrganicSocial   = "Organic Social"
	ChannelOrganicVideo    = "Organic Video"
	ChannelOrganicSearch   = "Organic Search"
	ChannelEmail           = "Email"
	ChannelAffiliates      = "Affiliates"
	ChannelAudio           = "Audio"
	ChannelSMS             = "SMS"
	ChannelReferral        = "Referral"
	ChannelDirect          = "Direct"
)

// Channels lists the 17 channel names Classify can return, in the order its
// rules try them.
var Channels = [17]string{
	ChannelCrossNetwork, ChannelPaidShopping, ChannelPaidSearch, ChannelPaidSocial,
	ChannelPaidVideo, ChannelDisplay, ChannelPaidOther, ChannelOrganicShopping,
	ChannelOrganicSocial, ChannelOrganicVideo, ChannelOrganicSearch, ChannelEmail,
	ChannelAffiliates, ChannelAudio, ChannelSMS, ChannelReferral, ChannelDirect,
}

// IsChannel reports whether s is one of the 17 channel names.
func IsChannel(s string) bool {
	for _, c := range Channels {
		if s == c {
			return true
		}
	}
	return false
}

// Inferred utm_medium values, stored when the landing URL gave no utm_medium
// but carried the search engine's own click id.
const (
	MediumGCLID   = "(gclid)"
	MediumMSCLKID = "(msclkid)"
)

// Classify returns the visit's source name ("" for direct: the API shows it as
// "Direct / None"), its channel (one of Channels; "Direct" for direct) and the
// utm_medium to store (the raw one, or the inferred "(gclid)" / "(msclkid)"
// when none was given, as Plausible does).
//
// The source is the landing URL's tag (utm_source, else source, else ref)
// normalised to a known source's name when it is one, else the referrer
// host's source in the referrer database, else the referrer host without a
// leading "www.". The package doc lists the rules.
//
// Classify does not allocate for already lower-case input; its work is linear
// in the length of l's strings, which ParseLanding bounds. The returned
// strings are either l's own or constants.
func Classify(l Landing) (src, channel, medium string) {
	ix := db()
	tagged := l.UTMSource
	if tagged == "" {
		tagged = l.SourceParam
	}
	if tagged == "" {
		tagged = l.RefParam
	}

	var (
		cat      category
		paid     bool   // the tag is an ad platform's own
		taggedLC string // the tag lower-cased: Plausible's utm_source column
	)
	switch {
	case tagged != "":
		taggedLC = strings.ToLower(tagged)
		src, cat, paid = ix.tagged(tagged, taggedLC)
	case l.RefHost != "":
		if e, ok := ix.host(l.RefHost); ok {
			src, cat = e.name, e.cat
		} else {
			src = strings.TrimPrefix(l.RefHost, "www.")
		}
	}

	click := l.ClickIDs.Param()
	medium = l.UTMMedium
	if medium == "" {
		switch {
		case src == "Google" && click == "gclid":
			medium = MediumGCLID
		case src == "Bing" && click == "msclkid":
			medium = MediumMSCLKID
		}
	}
	channel = channelOf(rule{
		src:      strings.ToLower(src),
		cat:      cat,
		medium:   strings.ToLower(medium),
		campaign: strings.ToLower(l.UTMCampaign),
		utmSrc:   taggedLC,
		paidSrc:  paid,
		click:    click,
	})
	return src, channel, medium
}

// tagged resolves a landing URL's source tag: a known source's name in any
// case ("GOOGLE" → Google), a shorthand ("fb" → Facebook), an ad platform's
// tag ("fb-ads", "google_ads", "adwords" → the platform, paid), or else the
// tag as sent. A tag that is a known referrer host ("facebook.com") stays as
// sent but takes that host's category.
func (ix *index) tagged(tag, lc string) (string, category, bool) {
	if e, ok := ix.names[lc]; ok {
		return e.name, e.cat, false
	}
	if a, ok := ix.alias[lc]; ok {
		return a.name, a.cat, a.paid
	}
	if base, ok := paidSuffix(lc); ok {
		if e, ok := ix.names[base]; ok {
			return e.name, e.cat, true
		}
		if a, ok := ix.alias[base]; ok {
			return a.name, a.cat, true
		}
	}
	if strings.IndexByte(lc, '.') > 0 {
		if e, ok := ix.host(lc); ok {
			return tag, e.cat, false
		}
	}
	return tag, catNone, false
}

// paidSuffix splits an ad platform's tag into the platform: "fb-ads",
// "facebook_ads", "google ads", "googleads", "fbad" → "fb", "facebook",
// "google", "google", "fb". Plausible counts as paid the utm_source
// spellings of its custom source list that end in "ads" or "ad"; this is the
// same rule applied to every known source instead of a list.
func paidSuffix(lc string) (string, bool) {
	base, ok := strings.CutSuffix(lc, "ads")
	if !ok {
		if base, ok = strings.CutSuffix(lc, "ad"); !ok {
			return "", false
		}
	}
	if n := len(base); n > 0 && (base[n-1] == '-' || base[n-1] == '_' || base[n-1] == ' ') {
		base = base[:n-1]
	}
	return base, base != ""
}

// rule is what the channel rules look at, lower-cased.
type rule struct {
	src      string   // the source name ("" for direct)
	cat      category // the source's category
	medium   string   // utm_medium as stored (inferred or raw)
	campaign string   // utm_campaign
	utmSrc   string   // the source tag as sent
	paidSrc  bool     // the tag is an ad platform's own
	click    string   // ClickIDs.Param
}

// channelOf applies Plausible's channel rules in their order; the first that
// holds gives the channel.
func channelOf(r rule) string {
	paidMedium := isPaidMedium(r.medium)
	paid := paidMedium || r.paidSrc
	shopping := r.cat == catShopping || isShoppingCampaign(r.campaign)
	switch {
	case strings.Contains(r.campaign, "cross-network"):
		return ChannelCrossNetwork
	case shopping && paidMedium:
		return ChannelPaidShopping
	case r.cat == catSearch && paid,
		r.src == "google" && r.click == "gclid",
		r.src == "bing" && r.click == "msclkid":
		return ChannelPaidSearch
	case r.cat == catSocial && paid:
		return ChannelPaidSocial
	case r.cat == catVideo && paid:
		return ChannelPaidVideo
	case isOneOf(r.medium, "display", "banner", "expandable", "interstitial", "cpm"):
		return ChannelDisplay
	case paidMedium:
		return ChannelPaidOther
	case shopping:
		return ChannelOrganicShopping
	case r.cat == catSocial,
		isOneOf(r.medium, "social", "social-network", "social-media", "sm", "social network", "social media"):
		return ChannelOrganicSocial
	case r.cat == catVideo, strings.Contains(r.medium, "video"):
		return ChannelOrganicVideo
	case r.cat == catSearch:
		return ChannelOrganicSearch
	case r.cat == catEmail, hasEmailTag(r.utmSrc), hasEmailTag(r.medium):
		return ChannelEmail
	case r.medium == "affiliate":
		return ChannelAffiliates
	case r.medium == "audio":
		return ChannelAudio
	case r.utmSrc == "sms", r.medium == "sms":
		return ChannelSMS
	case isOneOf(r.medium, "referral", "app", "link"), r.src != "":
		return ChannelReferral
	}
	return ChannelDirect
}

// isPaidMedium is GA4's paid-medium test, ^(.*cp.*|ppc|retargeting|paid.*)$.
func isPaidMedium(m string) bool {
	return strings.Contains(m, "cp") || m == "ppc" || m == "retargeting" || strings.HasPrefix(m, "paid")
}

// isShoppingCampaign is GA4's shopping-campaign test,
// ^(.*(([^a-df-z]|^)shop|shopping).*)$: "shopping" anywhere, or "shop" at the
// start or after a byte other than a-d and f-z ("e-shop", "eshop", "2shop",
// but not "workshop").
func isShoppingCampaign(c string) bool {
	if strings.Contains(c, "shopping") {
		return true
	}
	for i := 0; ; {
		j := strings.Index(c[i:], "shop")
		if j < 0 {
			return false
		}
		j += i
		if j == 0 {
			return true
		}
		if b := c[j-1]; !('a' <= b && b <= 'd' || 'f' <= b && b <= 'z') {
			return true
		}
		i = j + 1
	}
}

func hasEmailTag(s string) bool {
	for _, t := range [...]string{"email", "e-mail", "e_mail", "e mail", "newsletter"} {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

func isOneOf(s string, set ...string) bool {
	for _, t := range set {
		if s == t {
			return true
		}
	}
	return false
}
