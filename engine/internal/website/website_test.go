package website_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/engine/internal/website"
)

func str(s string) *string { return &s }

func TestNew(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		in     website.Input
		want   website.Record
		fields []invalid.Field
	}{
		{
			name: "defaults",
			in:   website.Input{Domain: str(" https://www.Example.COM/ ")},
			want: website.Record{Account: 3, Domain: "example.com", Privacy: 1, ExcludeBots: 1, Timezone: "UTC", CreatedAt: now, UpdatedAt: now},
		},
		{
			name: "every field",
			in: website.Input{Domain: str("a.example"), Privacy: str(" 0"), Email: str("1"), ExcludeBots: str("0"),
				ExcludeParams: str("utm_*"), ExcludeIPs: str("10.0.0.0/8"), Timezone: str(" Europe/Paris ")},
			want: website.Record{Account: 3, Domain: "a.example", Privacy: 0, Email: 1, ExcludeBots: 0,
				ExcludeParams: str("utm_*"), ExcludeIPs: str("10.0.0.0/8"), Timezone: "Europe/Paris", CreatedAt: now, UpdatedAt: now},
		},
		{
			name: "empty excludes are null",
			in:   website.Input{Domain: str("a.example"), ExcludeParams: str(""), ExcludeIPs: str("")},
			want: website.Record{Account: 3, Domain: "a.example", Privacy: 1, ExcludeBots: 1, Timezone: "UTC", CreatedAt: now, UpdatedAt: now},
		},
		{
			name: "invalid",
			in:   website.Input{Privacy: str("2"), Email: str("x"), Timezone: str("Local"), ExcludeIPs: str("nope")},
			want: website.Record{Account: 3, Privacy: 2, ExcludeBots: 1, Timezone: "UTC", CreatedAt: now, UpdatedAt: now},
			fields: []invalid.Field{
				{Field: "domain", Msg: "The domain field is required."},
				{Field: "email", Msg: "The selected email is invalid."},
				{Field: "password", Msg: website.PasswordRequired},
				{Field: "timezone", Msg: "The timezone must be a valid timezone."},
				{Field: "exclude_ips", Msg: `The exclude ips must be IP addresses or CIDR ranges, one per line (line 1: "nope" is not an IP address or CIDR).`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, verr := website.New(3, now, tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("record mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.fields, verr.Fields); diff != "" {
				t.Errorf("fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	w := website.Record{Timezone: "Asia/Tokyo"}
	if got := website.Location(&w).String(); got != "Asia/Tokyo" {
		t.Errorf("Location() = %s", got)
	}
	if w.Timezone = "Local"; website.Location(&w) != time.UTC {
		t.Errorf("Location() of Local = %s, want UTC", website.Location(&w))
	}
	if _, err := website.LoadLocation(""); err == nil {
		t.Error(`LoadLocation("") = nil error`)
	}
}

func TestList(t *testing.T) {
	all := func() []website.Record {
		return []website.Record{{ID: 3, Domain: "b.example"}, {ID: 1, Domain: "c.example"}, {ID: 2, Domain: "a.example"}}
	}
	ids := func(p website.Page) []uint32 {
		var out []uint32
		for _, w := range p.Websites {
			out = append(out, w.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    website.Query
		want []uint32
		last int
	}{
		{name: "by id", q: website.Query{}, want: []uint32{1, 2, 3}, last: 1},
		{name: "by domain desc", q: website.Query{SortBy: "domain", Desc: true}, want: []uint32{1, 3, 2}, last: 1},
		{name: "second page", q: website.Query{PerPage: 2, Page: 2}, want: []uint32{3}, last: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := website.List(all(), tc.q)
			if diff := cmp.Diff(tc.want, ids(p)); diff != "" || p.Total != 3 || p.LastPage != tc.last {
				t.Errorf("mismatch (-want +got):\n%s total %d last %d", diff, p.Total, p.LastPage)
			}
		})
	}
}
