package export

import "testing"

func TestCampaignQuery(t *testing.T) {
	for _, tc := range []struct {
		name                                                   string
		src, medium, campaign, content, term, source, referrer string
		want                                                   string
	}{
		{name: "none", want: ""},
		{name: "utm in Encode order", src: "news", medium: "email", campaign: "spring sale", want: "utm_campaign=spring+sale&utm_medium=email&utm_source=news"},
		{name: "source from a ref parameter", source: "hn", want: "ref=hn"},
		{name: "source from the referrer", source: "Google", referrer: "google.com", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := campaignQuery(tc.src, tc.medium, tc.campaign, tc.content, tc.term, tc.source, tc.referrer)
			if got != tc.want {
				t.Errorf("campaignQuery = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVisitorID checks that the export's visitor id is stable (exports
// taken by any version name a visitor alike) and tells visitors, periods
// and websites apart.
func TestVisitorID(t *testing.T) {
	const want = "a6c1370b7fb1a70e"
	a := visitorID(1, 20000, 7)
	if a != want {
		t.Fatalf("visitorID(1, 20000, 7) = %q, want %q", a, want)
	}
	for _, other := range []string{visitorID(2, 20000, 7), visitorID(1, 20001, 7), visitorID(1, 20000, 8)} {
		if other == a {
			t.Errorf("two visitors share the id %q", a)
		}
	}
}
