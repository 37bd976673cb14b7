package pages

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// fieldErrorRE finds the messages shown beside fields (and the goals
// page's message of no field).
var fieldErrorRE = regexp.MustCompile(`<p class="(?:field-)?error" id="([a-z_]+)-error">([^<]*)</p>`)

// fieldErrors returns the messages of a page by field.
func fieldErrors(body string) map[string]string {
	m := map[string]string{}
	for _, s := range fieldErrorRE.FindAllStringSubmatch(body, -1) {
		m[s[1]] = html.UnescapeString(s[2])
	}
	return m
}

// tokenFor returns a CSRF token for a form posting to action, made for c's
// CSRF cookie as the pages make them: for addresses no page shows c (another
// account's website).
func (c *client) tokenFor(action string) string {
	c.f.t.Helper()
	ck := c.cookie("/", csrfCookie)
	if ck == "" {
		c.f.t.Fatal("the client has no CSRF cookie")
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.AddCookie(&http.Cookie{Name: csrfCookie, Value: ck})
	return c.f.p.csrfToken(httptest.NewRecorder(), req, action)
}

// signedIn returns a client of the fixture's owner.
func (f *fixture) signedIn() *client {
	c := f.client()
	c.signIn(f.ownerKey)
	return c
}

// siteRecord is what the tests compare of a website.
type siteRecord struct {
	Domain        string
	Privacy       int
	HasPassword   bool
	Email         int
	ExcludeBots   int
	ExcludeParams string
	ExcludeIPs    string
	Timezone      string
}

func recordOf(w engine.Website) siteRecord {
	r := siteRecord{Domain: w.Domain, Privacy: w.Privacy, HasPassword: w.HasPassword(), Email: w.Email,
		ExcludeBots: w.ExcludeBots, Timezone: w.Timezone}
	if w.ExcludeParams != nil {
		r.ExcludeParams = "[" + *w.ExcludeParams + "]"
	}
	if w.ExcludeIPs != nil {
		r.ExcludeIPs = "[" + *w.ExcludeIPs + "]"
	}
	return r
}

// sitePath is the address of a page of website id.
func sitePath(id uint32, page string) string {
	return "/websites/" + strconv.FormatUint(uint64(id), 10) + page
}

func TestSitesSignedOut(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	id := strconv.Itoa(int(f.public.ID))
	for _, tc := range []struct {
		method, path, want string
	}{
		{method: "GET", path: "/", want: "/login"},
		{method: "GET", path: "/?q=pub", want: "/login"},
		{method: "GET", path: "/websites/new", want: "/login?next=%2Fwebsites%2Fnew"},
		{method: "POST", path: "/websites/new", want: "/login?next=%2Fwebsites%2Fnew"},
		{method: "GET", path: "/websites/" + id, want: "/login?next=%2Fwebsites%2F" + id},
		{method: "GET", path: "/websites/" + id + "/settings", want: "/login?next=%2Fwebsites%2F" + id + "%2Fsettings"},
		{method: "POST", path: "/websites/" + id + "/settings", want: "/login?next=%2Fwebsites%2F" + id + "%2Fsettings"},
		{method: "GET", path: "/websites/" + id + "/snippet", want: "/login?next=%2Fwebsites%2F" + id + "%2Fsnippet"},
		{method: "GET", path: "/websites/" + id + "/verify", want: "/login?next=%2Fwebsites%2F" + id + "%2Fverify"},
		{method: "GET", path: "/websites/" + id + "/delete", want: "/login?next=%2Fwebsites%2F" + id + "%2Fdelete"},
		{method: "POST", path: "/websites/" + id + "/delete", want: "/login?next=%2Fwebsites%2F" + id + "%2Fdelete"},
		{method: "GET", path: "/websites/" + id + "/goals", want: "/login?next=%2Fwebsites%2F" + id + "%2Fgoals"},
		{method: "POST", path: "/websites/" + id + "/goals", want: "/login?next=%2Fwebsites%2F" + id + "%2Fgoals"},
		{method: "POST", path: "/websites/" + id + "/goals/1/delete", want: "/login?next=%2Fwebsites%2F" + id + "%2Fgoals"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var res response
			if tc.method == "POST" {
				res = c.post(tc.path, url.Values{"csrf": {c.csrf("/login")}, "domain": {"public.example"}})
			} else {
				res = c.get(tc.path)
			}
			if res.status != http.StatusSeeOther || res.header.Get("Location") != tc.want {
				t.Errorf("status %d to %q, want 303 to %q", res.status, res.header.Get("Location"), tc.want)
			}
		})
	}
	// The next address comes back after signing in.
	res := c.post("/login", url.Values{"csrf": {c.csrfFor("/login?next=%2Fwebsites%2Fnew", "/login")}, "key": {f.ownerKey}, "next": {"/websites/new"}})
	if res.header.Get("Location") != "/websites/new" {
		t.Errorf("after sign-in: to %q, want /websites/new", res.header.Get("Location"))
	}
	if _, err := f.e.Owner(f.owner.ID).Website(context.Background(), f.public.ID); err != nil {
		t.Errorf("a signed-out delete removed the website: %v", err)
	}
}

func TestAddWebsite(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	long := strings.Repeat("a", 250) + ".example"
	for _, tc := range []struct {
		name       string
		form       url.Values
		wantStatus int
		wantErrors map[string]string // by field
		want       siteRecord        // the new website, when created
	}{
		{
			name:       "defaults",
			form:       url.Values{"domain": {"example.com"}, "privacy": {"1"}, "exclude_bots": {"1"}, "timezone": {"UTC"}},
			wantStatus: http.StatusSeeOther,
			want:       siteRecord{Domain: "example.com", Privacy: 1, ExcludeBots: 1, Timezone: "UTC"},
		},
		{
			name: "every field",
			form: url.Values{
				"domain": {"https://www.Shop.Example/"}, "privacy": {"2"}, "password": {"hunter2 hunter2"},
				"email": {"1"}, "exclude_params": {"fbclid\r\ngclid"}, "exclude_ips": {"203.0.113.7\r\n2001:db8::/32"},
				"timezone": {"Europe/Berlin"},
			},
			wantStatus: http.StatusSeeOther,
			want: siteRecord{Domain: "shop.example", Privacy: 2, HasPassword: true, Email: 1, ExcludeBots: 0,
				ExcludeParams: "[fbclid\ngclid]", ExcludeIPs: "[203.0.113.7\n2001:db8::/32]", Timezone: "Europe/Berlin"},
		},
		{
			name:       "an IDN, public, no time zone field",
			form:       url.Values{"domain": {"bücher.example"}, "privacy": {"0"}},
			wantStatus: http.StatusSeeOther,
			want:       siteRecord{Domain: "xn--bcher-kva.example", Privacy: 0, Timezone: "UTC"},
		},
		{
			name:       "a password without password privacy is not kept",
			form:       url.Values{"domain": {"open.example"}, "privacy": {"0"}, "password": {"not needed"}, "exclude_bots": {"1"}},
			wantStatus: http.StatusSeeOther,
			want:       siteRecord{Domain: "open.example", Privacy: 0, ExcludeBots: 1, Timezone: "UTC"},
		},
		{
			name:       "no domain",
			form:       url.Values{"domain": {"  "}, "privacy": {"1"}, "timezone": {"UTC"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"domain": "The domain field is required."},
		},
		{
			name:       "a domain with a path",
			form:       url.Values{"domain": {"https://example.org/blog"}, "privacy": {"1"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"domain": "The domain format is invalid."},
		},
		{
			name:       "a long domain",
			form:       url.Values{"domain": {long}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"domain": "The domain must not be greater than 255 characters."},
		},
		{
			name:       "a domain of this account",
			form:       url.Values{"domain": {"www.public.example"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"domain": "The domain has already been taken."},
		},
		{
			name:       "a domain of another account",
			form:       url.Values{"domain": {"other.example"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"domain": "The domain has already been taken."},
		},
		{
			name:       "password privacy without a password",
			form:       url.Values{"domain": {"pw.example"}, "privacy": {"2"}, "password": {""}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"password": "The password field is required when privacy is 2."},
		},
		{
			name:       "a long password",
			form:       url.Values{"domain": {"pw.example"}, "privacy": {"2"}, "password": {strings.Repeat("p", 129)}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"password": "The password must not be greater than 128 characters."},
		},
		{
			name:       "forged choices",
			form:       url.Values{"domain": {"x.example"}, "privacy": {"7"}, "email": {"yes"}, "exclude_bots": {"2"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{
				"privacy": "The selected privacy is invalid.", "email": "The selected email is invalid.",
				"exclude_bots": "The selected exclude bots is invalid.",
			},
		},
		{
			name:       "an unknown time zone",
			form:       url.Values{"domain": {"tz.example"}, "timezone": {"Mars/Olympus_Mons"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"timezone": "The timezone must be a valid timezone."},
		},
		{
			name:       "Local is no time zone",
			form:       url.Values{"domain": {"tz.example"}, "timezone": {"Local"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"timezone": "The timezone must be a valid timezone."},
		},
		{
			name:       "a line that is no IP address",
			form:       url.Values{"domain": {"ip.example"}, "exclude_ips": {"10.0.0.1\r\nnope"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"exclude_ips": `The exclude ips must be IP addresses or CIDR ranges, one per line (line 2: "nope" is not an IP address or CIDR).`},
		},
		{
			name:       "too many parameters",
			form:       url.Values{"domain": {"params.example"}, "exclude_params": {strings.Repeat("p", 65536)}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"exclude_params": "The exclude params must not be greater than 65535 characters."},
		},
		{
			name:       "every field wrong",
			form:       url.Values{"domain": {""}, "privacy": {"2"}, "email": {"2"}, "timezone": {"Nowhere"}, "exclude_ips": {"x"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{
				"domain": "The domain field is required.", "email": "The selected email is invalid.",
				"password":    "The password field is required when privacy is 2.",
				"timezone":    "The timezone must be a valid timezone.",
				"exclude_ips": `The exclude ips must be IP addresses or CIDR ranges, one per line (line 1: "x" is not an IP address or CIDR).`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.e.Owner(f.owner.ID).Websites(context.Background(), engine.WebsiteQuery{}).Total
			form := url.Values{"csrf": {c.csrfFor("/websites/new", "/websites/new")}}
			for k, v := range tc.form {
				form[k] = v
			}
			res := c.post("/websites/new", form)
			if res.status != tc.wantStatus {
				t.Fatalf("status %d, want %d\n%s", res.status, tc.wantStatus, mainText(res.body))
			}
			list := f.e.Owner(f.owner.ID).Websites(context.Background(), engine.WebsiteQuery{SortBy: "id", Desc: true})
			if tc.wantStatus != http.StatusSeeOther {
				if diff := cmp.Diff(tc.wantErrors, fieldErrors(res.body)); diff != "" {
					t.Errorf("messages: mismatch (-want +got)\n%s", diff)
				}
				if list.Total != before {
					t.Errorf("a refused form created a website: %d websites, want %d", list.Total, before)
				}
				// The form comes back filled in, but for the password.
				if d := tc.form.Get("domain"); strings.TrimSpace(d) != "" {
					mustContain(t, "refilled form", res.body, `value="`+html.EscapeString(d)+`"`)
				}
				if pw := tc.form.Get("password"); pw != "" && strings.Contains(res.body, pw) {
					t.Error("the refused password is sent back")
				}
				mustContain(t, "summary", res.body, `<div class="error summary">`)
				return
			}
			web := list.Websites[0]
			if loc := res.header.Get("Location"); loc != sitePath(web.ID, "/snippet") {
				t.Errorf("redirect to %q, want %q", loc, sitePath(web.ID, "/snippet"))
			}
			if diff := cmp.Diff(tc.want, recordOf(web)); diff != "" {
				t.Errorf("website: mismatch (-want +got)\n%s", diff)
			}
			if tc.want.HasPassword {
				if ok, err := f.e.CheckPassword(context.Background(), web.ID, tc.form.Get("password")); !ok || err != nil {
					t.Errorf("CheckPassword = %v, %v; want true", ok, err)
				}
			}
			mustContain(t, "snippet page", mainText(c.get(res.header.Get("Location")).body), web.Domain+" was added.")
		})
	}
}

func TestAddForm(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	res := c.get("/websites/new")
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	body := res.body
	// Every field has a label, the defaults are the engine's, the zone
	// list is there, the browser's zone replaces UTC by script only.
	for _, id := range []string{"domain", "privacy-0", "privacy-1", "privacy-2", "password", "email", "exclude_bots", "exclude_params", "exclude_ips", "timezone"} {
		mustContain(t, "labels", body, `<label for="`+id+`"`, `id="`+id+`"`)
	}
	mustContain(t, "defaults", body, `id="privacy-1" name="privacy" value="1" checked`, `id="exclude_bots" name="exclude_bots" value="1" checked`,
		`name="timezone" value="UTC" list="zones"`, `data-detect-zone`, `<option value="Europe/Berlin" label="Germany: most of Germany">`,
		`<script src="/assets/sites.js?v=`)
	if strings.Contains(body, `id="email" name="email" value="1" checked`) {
		t.Error("email reports are on by default")
	}
	if n := strings.Count(body, "<option "); n != len(zones) {
		t.Errorf("%d zones offered, want %d", n, len(zones))
	}
	// A refused form keeps the zone typed, without the script's guess.
	res = c.post("/websites/new", url.Values{"csrf": {c.csrfFor("/websites/new", "/websites/new")}, "timezone": {"Asia/Tokyo"}})
	mustContain(t, "refused form", res.body, `value="Asia/Tokyo"`)
	if strings.Contains(res.body, "data-detect-zone") {
		t.Error("a refused form lets the script change the zone")
	}
	// Field errors are linked to their fields.
	mustContain(t, "refused form", res.body, `aria-describedby="domain-hint domain-error" aria-invalid="true"`, `<a href="#domain">The domain field is required.</a>`)
	// Markup typed into a field comes back as text.
	res = c.post("/websites/new", url.Values{"csrf": {c.csrfFor("/websites/new", "/websites/new")}, "domain": {`"><script>alert(1)</script>`},
		"exclude_params": {"</textarea><script>alert(2)</script>"}})
	if res.status != http.StatusUnprocessableEntity || strings.Contains(res.body, "<script>alert") {
		t.Errorf("status %d; markup is sent back unescaped:\n%s", res.status, res.body)
	}
	mustContain(t, "escaped", res.body, "&lt;/textarea&gt;&lt;script&gt;alert(2)&lt;/script&gt;</textarea>")
	// A form over its limit is refused before it is read; not a 5xx.
	res = c.post("/websites/new", url.Values{"csrf": {c.csrfFor("/websites/new", "/websites/new")}, "exclude_ips": {strings.Repeat("1", maxSiteForm)}})
	if res.status != http.StatusBadRequest {
		t.Errorf("a form over %d bytes: status %d, want 400", maxSiteForm, res.status)
	}
	goals := sitePath(f.public.ID, "/goals")
	res = c.post(goals, url.Values{"csrf": {c.csrfFor(goals, goals)}, "kind": {"event"}, "event_name": {strings.Repeat("e", maxGoalForm)}})
	if res.status != http.StatusBadRequest {
		t.Errorf("a goal form over %d bytes: status %d, want 400", maxGoalForm, res.status)
	}
}

func TestSettings(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	own := f.e.Owner(f.owner.ID)
	secret := sitePath(f.secret.ID, "/settings")

	res := c.get(secret)
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	mustContain(t, "settings", mainText(res.body), "Settings of secret.example", "secret.example The domain cannot be changed", "A password is set. Leave this empty to keep it")
	mustContain(t, "settings", res.body, `id="privacy-2" name="privacy" value="2" checked`, `aria-current="page">Settings</a>`)
	if strings.Contains(res.body, `name="domain"`) || strings.Contains(res.body, "data-detect-zone") {
		t.Error("the settings let the domain or the script's zone change")
	}

	for _, tc := range []struct {
		name       string
		form       url.Values
		wantStatus int
		wantErrors map[string]string
		wantNotice string
		want       siteRecord
		password   string // the password that works afterwards, if any
	}{
		{
			name:       "an empty password keeps it; the domain is not changed",
			form:       url.Values{"domain": {"stolen.example"}, "privacy": {"2"}, "password": {""}, "exclude_bots": {"1"}, "timezone": {"Europe/Paris"}, "exclude_params": {"ref"}},
			wantStatus: http.StatusSeeOther,
			wantNotice: "The settings were saved.",
			want:       siteRecord{Domain: "secret.example", Privacy: 2, HasPassword: true, ExcludeBots: 1, ExcludeParams: "[ref]", Timezone: "Europe/Paris"},
			password:   secretPassword,
		},
		{
			name:       "a new password",
			form:       url.Values{"privacy": {"2"}, "password": {"new secret"}, "timezone": {"Europe/Paris"}, "exclude_params": {""}},
			wantStatus: http.StatusSeeOther,
			wantNotice: "The settings were saved.",
			want:       siteRecord{Domain: "secret.example", Privacy: 2, HasPassword: true, Timezone: "Europe/Paris"},
			password:   "new secret",
		},
		{
			name:       "bad fields change nothing",
			form:       url.Values{"privacy": {"0"}, "email": {"3"}, "timezone": {"Europe/Atlantis"}, "exclude_ips": {"999.1.1.1"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{
				"email": "The selected email is invalid.", "timezone": "The timezone must be a valid timezone.",
				"exclude_ips": `The exclude ips must be IP addresses or CIDR ranges, one per line (line 1: "999.1.1.1" is not an IP address or CIDR).`,
			},
			want:     siteRecord{Domain: "secret.example", Privacy: 2, HasPassword: true, Timezone: "Europe/Paris"},
			password: "new secret",
		},
		{
			name:       "private removes the password",
			form:       url.Values{"privacy": {"1"}, "email": {"1"}, "exclude_bots": {"1"}, "timezone": {"UTC"}},
			wantStatus: http.StatusSeeOther,
			wantNotice: "The settings were saved. The password was removed.",
			want:       siteRecord{Domain: "secret.example", Privacy: 1, Email: 1, ExcludeBots: 1, Timezone: "UTC"},
		},
		{
			name:       "password privacy needs a password again",
			form:       url.Values{"privacy": {"2"}, "timezone": {"UTC"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"password": "The password field is required when privacy is 2."},
			want:       siteRecord{Domain: "secret.example", Privacy: 1, Email: 1, ExcludeBots: 1, Timezone: "UTC"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {c.csrfFor(secret, secret)}}
			for k, v := range tc.form {
				form[k] = v
			}
			res := c.post(secret, form)
			if res.status != tc.wantStatus {
				t.Fatalf("status %d, want %d\n%s", res.status, tc.wantStatus, mainText(res.body))
			}
			if tc.wantStatus == http.StatusSeeOther {
				if loc := res.header.Get("Location"); loc != secret {
					t.Errorf("redirect to %q, want %q", loc, secret)
				}
				mustContain(t, "notice", mainText(c.get(secret).body), tc.wantNotice)
			}
			if diff := cmp.Diff(tc.wantErrors, fieldErrors(res.body), cmp.Comparer(func(a, b map[string]string) bool {
				return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b)
			})); diff != "" {
				t.Errorf("messages: mismatch (-want +got)\n%s", diff)
			}
			web, err := own.Website(ctx, f.secret.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, recordOf(web)); diff != "" {
				t.Errorf("website: mismatch (-want +got)\n%s", diff)
			}
			if tc.password != "" {
				if ok, err := f.e.CheckPassword(ctx, web.ID, tc.password); !ok || err != nil {
					t.Errorf("CheckPassword(%q) = %v, %v; want true", tc.password, ok, err)
				}
			}
		})
	}
	// The notice is shown once.
	if strings.Contains(c.get(secret).body, "were saved") {
		t.Error("the notice is shown twice")
	}
}

func TestSiteCSRF(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	goal, err := f.e.Owner(f.owner.ID).AddGoal(ctx, f.public.ID, engine.Goal{EventName: "Signup"})
	if err != nil {
		t.Fatal(err)
	}
	other := f.client()
	other.signIn(f.otherKey)
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{path: "/websites/new", form: url.Values{"domain": {"csrf.example"}}},
		{path: sitePath(f.public.ID, "/settings"), form: url.Values{"privacy": {"2"}, "password": {"x"}}},
		{path: sitePath(f.public.ID, "/delete"), form: url.Values{"domain": {"public.example"}}},
		{path: sitePath(f.public.ID, "/goals"), form: url.Values{"kind": {"event"}, "event_name": {"Purchase"}}},
		{path: sitePath(f.public.ID, "/goals/"+strconv.FormatUint(goal.ID, 10)+"/delete"), form: url.Values{}},
	} {
		for _, tok := range []struct {
			name, csrf string
			header     map[string]string
		}{
			{name: "missing"},
			{name: "garbled", csrf: "1.x" + c.tokenFor(tc.path)},
			{name: "of another form", csrf: c.tokenFor("/logout")},
			{name: "of another website's form", csrf: c.tokenFor(sitePath(f.private.ID, strings.TrimPrefix(tc.path, sitePath(f.public.ID, ""))))},
			{name: "of another cookie", csrf: other.tokenFor(tc.path)},
			{name: "expired", csrf: "1700000000." + strings.SplitN(c.tokenFor(tc.path), ".", 2)[1]},
			{name: "cross-site", csrf: c.tokenFor(tc.path), header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		} {
			t.Run(tc.path+" "+tok.name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range tc.form {
					form[k] = v
				}
				if tok.csrf != "" {
					form.Set("csrf", tok.csrf)
				}
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL+tc.path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range tok.header {
					req.Header.Set(k, v)
				}
				res := c.do(req)
				if res.status != http.StatusForbidden {
					t.Fatalf("status %d, want 403", res.status)
				}
				mustContain(t, "403 page", text(res.body), "The form has expired")
			})
		}
	}
	// Nothing changed.
	own := f.e.Owner(f.owner.ID)
	web, err := own.Website(ctx, f.public.ID)
	if err != nil || web.Privacy != 0 {
		t.Errorf("public.example: %+v, %v; want it unchanged", web, err)
	}
	if _, err := own.WebsiteByDomain(ctx, "csrf.example"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("csrf.example was created: %v", err)
	}
	if goals, _ := own.Goals(ctx, f.public.ID); len(goals) != 1 {
		t.Errorf("goals %+v, want Signup alone", goals)
	}
}

// TestSiteIsolation: another account's website, or an id that is none, is
// a 404 on every page and form, with a valid CSRF token; nothing changes.
func TestSiteIsolation(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	theirs, err := f.e.Owner(f.other.ID).AddGoal(ctx, f.otherSecret.ID, engine.Goal{EventName: "Theirs"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := f.e.Owner(f.owner.ID).AddGoal(ctx, f.public.ID, engine.Goal{EventName: "Mine"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{strconv.Itoa(int(f.otherSecret.ID)), "999", "0", "01", "+1", "-1", "1e3", "abc", "4294967296", strings.Repeat("9", 300)}
	var cases []string
	for _, id := range ids {
		for _, page := range []string{"", "/settings", "/snippet", "/verify", "/delete", "/goals"} {
			cases = append(cases, "GET /websites/"+id+page)
		}
		for _, page := range []string{"/settings", "/delete", "/goals", "/goals/" + strconv.FormatUint(theirs.ID, 10) + "/delete"} {
			cases = append(cases, "POST /websites/"+id+page)
		}
	}
	// A goal of another website, mine or not, or no goal.
	for _, g := range []string{strconv.FormatUint(theirs.ID+100, 10), "0", "x", "18446744073709551616"} {
		cases = append(cases, "POST "+sitePath(f.public.ID, "/goals/"+g+"/delete"))
	}
	cases = append(cases, "POST "+sitePath(f.private.ID, "/goals/"+strconv.FormatUint(mine.ID, 10)+"/delete"))
	for _, tc := range cases {
		t.Run(tc[:min(len(tc), 80)], func(t *testing.T) {
			method, p, _ := strings.Cut(tc, " ")
			var res response
			if method == "POST" {
				res = c.post(p, url.Values{"csrf": {c.tokenFor(p)}, "domain": {"other.example"}, "privacy": {"0"},
					"kind": {"event"}, "event_name": {"Mine"}})
			} else {
				res = c.get(p)
			}
			if res.status != http.StatusNotFound {
				t.Fatalf("status %d, want 404\n%s", res.status, mainText(res.body))
			}
			if strings.Contains(res.body, "other.example") {
				t.Error("the 404 page names the other account's website")
			}
		})
	}
	web, err := f.e.Owner(f.other.ID).Website(ctx, f.otherSecret.ID)
	if err != nil || web.Privacy != 2 {
		t.Errorf("other.example: %+v, %v; want it unchanged", web, err)
	}
	if goals, _ := f.e.Owner(f.other.ID).Goals(ctx, f.otherSecret.ID); len(goals) != 1 {
		t.Errorf("other.example's goals: %+v, want Theirs alone", goals)
	}
	if goals, _ := f.e.Owner(f.owner.ID).Goals(ctx, f.public.ID); len(goals) != 1 {
		t.Errorf("public.example's goals: %+v, want Mine alone", goals)
	}
	// GET /websites/<mine> leads to its settings.
	if res := c.get(sitePath(f.public.ID, "")); res.status != http.StatusSeeOther || res.header.Get("Location") != sitePath(f.public.ID, "/settings") {
		t.Errorf("GET %s: status %d to %q, want 303 to its settings", sitePath(f.public.ID, ""), res.status, res.header.Get("Location"))
	}
}

func TestSnippet(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	res := c.get(sitePath(f.public.ID, "/snippet"))
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	base := f.srv.URL
	want := `<script data-host="` + base + `" src="` + base + `/js/script.js" async defer></script>`
	mustContain(t, "snippet", res.body, `<textarea id="snippet" class="code" rows="4" readonly spellcheck="false" aria-describedby="snippet-hint">`+html.EscapeString(want)+`</textarea>`,
		`<button type="button" class="secondary" data-copy="snippet" hidden>`, `aria-current="page">Snippet</a>`)
	// Without -public-url the page says where the address came from.
	mustContain(t, "snippet without a public URL", mainText(res.body), "The address in it, "+base+", is the one your browser used", "-public-url")
	f.p.publicURL = "https://stats.example.org"
	if body := c.get(sitePath(f.public.ID, "/snippet")).body; strings.Contains(body, `id="snippet-address"`) {
		t.Error("the address hint is shown with a public URL set")
	}
	f.p.publicURL = ""

	// withHost asks for the snippet with a Host header (the cookie jar
	// would send the cookies of that host).
	withHost := func(host string) response {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+sitePath(f.public.ID, "/snippet"), nil)
		req.Host = host
		u, _ := url.Parse(f.srv.URL)
		for _, ck := range c.hc.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		res := c.do(req)
		if res.status != http.StatusOK {
			t.Fatalf("Host %q: status %d", host, res.status)
		}
		return res
	}
	// A Host header that is not a plain host name does not reach the
	// snippet.
	res = withHost("evil'example.org")
	mustContain(t, "snippet", res.body, html.EscapeString(`data-host="`+base+`"`))

	// A configured address wins over the Host header.
	f.p.base = func(*http.Request) string { return "https://stats.example.org/webstats/" }
	res = withHost("evil.example")
	mustContain(t, "snippet", res.body, html.EscapeString(`<script data-host="https://stats.example.org/webstats" src="https://stats.example.org/webstats/js/script.js" async defer></script>`))
	if strings.Contains(res.body, "evil.example") {
		t.Error("the Host header reached the page")
	}
}

func TestPlainHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{host: "stats.example.org", want: true},
		{host: "127.0.0.1:8080", want: true},
		{host: "[::1]:8080", want: true},
		{host: "[::1]", want: true},
		{host: "", want: false},
		{host: "a b", want: false},
		{host: "example.org:0", want: false},
		{host: "example.org:99999", want: false},
		{host: "user@example.org", want: false},
		{host: `x"><script>`, want: false},
		{host: "[127.0.0.1]:80", want: false},
		{host: "example.org/path", want: false},
	} {
		if got := plainHost(tc.host); got != tc.want {
			t.Errorf("plainHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	verify := sitePath(f.public.ID, "/verify")
	check := func(want ...string) string {
		t.Helper()
		res := c.get(verify)
		if res.status != http.StatusOK {
			t.Fatalf("status %d", res.status)
		}
		txt := mainText(res.body)
		mustContain(t, "verify", txt, want...)
		return txt
	}

	// No hit, a hit 11 minutes ago, a dropped hit: not yet, with the causes.
	f.track(hit{url: "https://public.example/old", at: testNow.Add(-11 * time.Minute)})
	if _, err := f.e.Owner(f.owner.ID).UpdateWebsite(ctx, f.public.ID, engine.WebsiteInput{ExcludeIPs: ptr("198.51.100.0/24\n203.0.113.9")}); err != nil {
		t.Fatal(err)
	}
	res, err := f.e.Track(ctx, engine.Hit{URL: "https://public.example/", UserAgent: chromeUA, Language: "en", IP: netip.MustParseAddr("198.51.100.7"), Time: testNow})
	if err != nil || res.Accepted != 0 {
		t.Fatalf("Track: %+v, %v; want the hit dropped", res, err)
	}
	txt := check("Not yet: no pageview of public.example was counted in the last 10 minutes.",
		"Another domain.", "here public.example", "The snippet must load from "+f.srv.URL,
		"An ad or tracker blocker", "Do Not Track , if you added data-dnt=\"true\"",
		"The bot filter is on for this website", "this website ignores 2 addresses or ranges")
	if strings.Contains(txt, "Installed") {
		t.Error("not installed, but the page says so")
	}
	if n := strings.Count(check(), "Verify installation"); n != 1 {
		t.Errorf("%d verify buttons", n)
	}

	// Another website's hit does not count.
	f.track(hit{url: "https://private.example/", at: testNow.Add(-time.Minute)})
	check("Not yet")

	// A counted pageview two minutes ago: installed.
	f.track(hit{url: "https://public.example/landing", ip: "192.0.2.1", at: testNow.Add(-2 * time.Minute)})
	check("Installed. The last pageview arrived 2 minutes ago (1 in the last 10 minutes).")
	f.track(hit{url: "https://public.example/next", ip: "192.0.2.1", at: testNow})
	check("Installed. The last pageview arrived this minute (2 in the last 10 minutes).")
	// Ten minutes later, not any more.
	f.clock.Add(10 * time.Minute)
	check("Not yet")

	// The causes follow the settings.
	if _, err := f.e.Owner(f.owner.ID).UpdateWebsite(ctx, f.public.ID, engine.WebsiteInput{ExcludeBots: ptr("0"), ExcludeIPs: ptr("")}); err != nil {
		t.Fatal(err)
	}
	check("The bot filter is off for this website, so it is not the cause", "Excluded IP addresses: none are set for this website.")
}

func ptr[T any](v T) *T { return &v }

func TestDeleteWebsite(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	own := f.e.Owner(f.owner.ID)
	f.track(hit{url: "https://private.example/", ip: "192.0.2.1", at: testNow.Add(-time.Hour)})
	totals := func() engine.Totals {
		t.Helper()
		web, err := own.WebsiteByDomain(ctx, "private.example")
		if err != nil {
			t.Fatal(err)
		}
		tot, err := own.Totals(ctx, web.ID, engine.DateOf(2026, 11, 1), engine.DateOf(2026, 11, 21))
		if err != nil {
			t.Fatal(err)
		}
		return tot
	}
	del := sitePath(f.private.ID, "/delete")
	res := c.get(del)
	mustContain(t, "form", mainText(res.body), "Delete private.example", "Type private.example to confirm", "cannot be undone")

	for _, tc := range []struct {
		name, typed, want string
	}{
		{name: "nothing", typed: " ", want: "Type the domain private.example to delete this website."},
		{name: "another of mine", typed: "public.example", want: "The domain you typed is not private.example. Type it exactly to delete this website."},
		{name: "a near miss", typed: "private.exampl", want: "The domain you typed is not private.example. Type it exactly to delete this website."},
		{name: "markup", typed: "<b>private.example</b>", want: "The domain you typed is not private.example. Type it exactly to delete this website."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.post(del, url.Values{"csrf": {c.csrfFor(del, del)}, "domain": {tc.typed}})
			if res.status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422", res.status)
			}
			if diff := cmp.Diff(map[string]string{"confirm": tc.want}, fieldErrors(res.body)); diff != "" {
				t.Errorf("messages: mismatch (-want +got)\n%s", diff)
			}
			if strings.Contains(res.body, "<b>") {
				t.Error("the typed markup came back unescaped")
			}
			if got := totals(); got.Pageviews != 1 {
				t.Errorf("after a refused delete: %+v, want the pageview kept", got)
			}
		})
	}

	res = c.post(del, url.Values{"csrf": {c.csrfFor(del, del)}, "domain": {" Private.Example "}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/" {
		t.Fatalf("status %d to %q, want 303 to /", res.status, res.header.Get("Location"))
	}
	home := mainText(c.get("/").body)
	mustContain(t, "list", home, "private.example and its statistics were deleted.")
	if strings.Contains(strings.ReplaceAll(home, "private.example and its statistics were deleted.", ""), "private.example") {
		t.Error("the list still shows private.example")
	}
	if _, err := own.Website(ctx, f.private.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Website after delete: %v, want ErrNotFound", err)
	}
	if res := c.get(del); res.status != http.StatusNotFound {
		t.Errorf("the delete page of a deleted website: status %d, want 404", res.status)
	}
	// The statistics went with it: the domain added again starts empty.
	if _, err := own.CreateWebsite(ctx, engine.WebsiteInput{Domain: ptr("private.example")}); err != nil {
		t.Fatal(err)
	}
	if got := totals(); got != (engine.Totals{}) {
		t.Errorf("the domain added again: %+v, want no statistics", got)
	}
}

func TestGoalsPages(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	own := f.e.Owner(f.owner.ID)
	goals := sitePath(f.public.ID, "/goals")
	mustContain(t, "empty", mainText(c.get(goals).body), "Goals of public.example", "No goals yet.", "Add a custom event goal", "Add a pageview goal")

	add := func(form url.Values) response {
		t.Helper()
		form.Set("csrf", c.csrfFor(goals, goals))
		return c.post(goals, form)
	}
	type goal struct{ Name, Event, Path, Currency string }
	list := func() []goal {
		t.Helper()
		gs, err := own.Goals(ctx, f.public.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []goal
		for _, g := range gs {
			out = append(out, goal{g.DisplayName, g.EventName, g.PagePath, g.Currency})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		form       url.Values
		wantStatus int
		wantErrors map[string]string
		wantNotice string
	}{
		{
			name:       "an event with a currency",
			form:       url.Values{"kind": {"event"}, "event_name": {" Purchase "}, "currency": {"eur"}},
			wantStatus: http.StatusSeeOther, wantNotice: "The goal Purchase was added.",
		},
		{
			name:       "a page with a wildcard and a name",
			form:       url.Values{"kind": {"page"}, "page_path": {"/blog/**"}, "page_display": {"Read the blog"}, "event_name": {"ignored"}},
			wantStatus: http.StatusSeeOther, wantNotice: "The goal Read the blog was added.",
		},
		{
			name:       "an event with markup",
			form:       url.Values{"kind": {"event"}, "event_name": {"<script>alert(1)</script>"}},
			wantStatus: http.StatusSeeOther, wantNotice: "The goal <script>alert(1)</script> was added.",
		},
		{
			name:       "the same event again",
			form:       url.Values{"kind": {"event"}, "event_name": {"Purchase"}},
			wantStatus: http.StatusSeeOther, wantNotice: "The goal Purchase already exists.",
		},
		{
			name:       "no event name",
			form:       url.Values{"kind": {"event"}, "event_name": {" "}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"event_name": "Exactly one of event_name and page_path is required."},
		},
		{
			name:       "a long event name",
			form:       url.Values{"kind": {"event"}, "event_name": {strings.Repeat("e", 121)}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"event_name": "Event name must be 1 to 120 characters."},
		},
		{
			name:       "a bad currency",
			form:       url.Values{"kind": {"event"}, "event_name": {"Order"}, "currency": {"EURO"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"currency": "Currency must be a 3-letter ISO 4217 code, on an event goal."},
		},
		{
			name:       "a path without a slash",
			form:       url.Values{"kind": {"page"}, "page_path": {"pricing"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"page_path": "Page path must start with / and be at most 2000 characters."},
		},
		{
			name:       "no path",
			form:       url.Values{"kind": {"page"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"page_path": "Exactly one of event_name and page_path is required."},
		},
		{
			name:       "a name taken",
			form:       url.Values{"kind": {"page"}, "page_path": {"/pricing"}, "page_display": {"Purchase"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"page_display": "Display name has already been taken."},
		},
		{
			name:       "no kind",
			form:       url.Values{"event_name": {"Order"}},
			wantStatus: http.StatusUnprocessableEntity,
			wantErrors: map[string]string{"goal": "Exactly one of event_name and page_path is required."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := list()
			res := add(tc.form)
			if res.status != tc.wantStatus {
				t.Fatalf("status %d, want %d\n%s", res.status, tc.wantStatus, mainText(res.body))
			}
			if tc.wantStatus == http.StatusSeeOther {
				if loc := res.header.Get("Location"); loc != goals {
					t.Errorf("redirect to %q, want %q", loc, goals)
				}
				mustContain(t, "notice", mainText(c.get(goals).body), tc.wantNotice)
				return
			}
			if diff := cmp.Diff(tc.wantErrors, fieldErrors(res.body)); diff != "" {
				t.Errorf("messages: mismatch (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(before, list()); diff != "" {
				t.Errorf("a refused goal changed the goals: mismatch (-want +got)\n%s", diff)
			}
			// The refused form comes back filled in.
			if tc.form.Get("kind") != "" {
				for _, k := range []string{"event_name", "currency", "page_path", "page_display"} {
					if v := tc.form.Get(k); strings.TrimSpace(v) != "" {
						mustContain(t, "refilled", res.body, `name="`+k+`" value="`+html.EscapeString(v)+`"`)
					}
				}
			}
		})
	}
	want := []goal{
		{Name: "Purchase", Event: "Purchase", Currency: "EUR"},
		{Name: "Read the blog", Path: "/blog/**"},
		{Name: "<script>alert(1)</script>", Event: "<script>alert(1)</script>"},
	}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Fatalf("goals: mismatch (-want +got)\n%s", diff)
	}
	page := c.get(goals)
	mustContain(t, "list", mainText(page.body), "Purchase Custom event the event Purchase EUR", "Read the blog Pageview views of /blog/**", "3 of at most 1,000 goals")
	if strings.Contains(page.body, "<script>alert") {
		t.Error("a goal's markup is not escaped")
	}

	// Delete the blog goal.
	gs, _ := own.Goals(ctx, f.public.ID)
	del := goals + "/" + strconv.FormatUint(gs[1].ID, 10) + "/delete"
	res := c.post(del, url.Values{"csrf": {c.csrfFor(goals, del)}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != goals {
		t.Fatalf("delete: status %d to %q", res.status, res.header.Get("Location"))
	}
	mustContain(t, "notice", mainText(c.get(goals).body), "The goal Read the blog was deleted.")
	if diff := cmp.Diff([]goal{want[0], want[2]}, list()); diff != "" {
		t.Errorf("after delete: mismatch (-want +got)\n%s", diff)
	}
	// Again: it is gone.
	if res := c.post(del, url.Values{"csrf": {c.tokenFor(del)}}); res.status != http.StatusNotFound {
		t.Errorf("delete again: status %d, want 404", res.status)
	}
}

func TestSitesList(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	ctx := context.Background()
	f.trackScenario()
	f.track(hit{url: "https://public.example/today", ip: "192.0.2.50", at: testNow.Add(-time.Hour)})
	res := c.get("/")
	txt := mainText(res.body)
	// Newest first: public (1) is the oldest; Today counts today's visitor.
	mustContain(t, "list", txt, "Your websites Add a website", "Search domains",
		"secret.example Password 0 0 0 Settings of secret.example",
		"private.example Private 0 0 0",
		"public.example Public 4 5 1 Settings of public.example Snippet of public.example")
	mustContain(t, "sparkline", res.body, `aria-label="Visitors per day over the last 30 days, from 0 to 1"`)
	if i, j := strings.Index(txt, "secret.example"), strings.Index(txt, "public.example"); i > j {
		t.Error("the list is not newest first")
	}
	mustContain(t, "links", res.body, `href="/websites/new"`, `href="/stats/public.example"`, `href="/websites/1/settings"`, `href="/websites/1/snippet"`)
	if strings.Contains(txt, "other.example") {
		t.Error("the list shows another account's website")
	}

	// Search.
	mustContain(t, "search", mainText(c.get("/?q=PUB").body), "public.example Public")
	if txt := mainText(c.get("/?q=pub").body); strings.Contains(txt, "secret.example") {
		t.Error("the search shows a website that does not match")
	}
	mustContain(t, "no match", mainText(c.get("/?q=nothing%3Chere").body), "No website matches “nothing<here”.")
	if res := c.get("/?q=" + strings.Repeat("a", 256)); res.status != http.StatusBadRequest {
		t.Errorf("a long search: status %d, want 400", res.status)
	}

	// Pages of 50.
	own := f.e.Owner(f.owner.ID)
	for i := range 52 {
		if _, err := own.CreateWebsite(ctx, engine.WebsiteInput{Domain: ptr(fmt.Sprintf("s%02d.example", i))}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<th scope="row"><a href="/stats/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	first := c.get("/")
	got := rows(first.body)
	if len(got) != homePerPage || got[0] != "s51.example" || got[49] != "s02.example" {
		t.Errorf("page 1: %d rows, %q … %q; want 50, s51.example … s02.example", len(got), got[0], got[len(got)-1])
	}
	mustContain(t, "pager", first.body, `<a href="/?page=2" rel="next">Next page</a>`, "Page 1 of 2 (55 websites)")
	second := c.get("/?page=2")
	if diff := cmp.Diff([]string{"s01.example", "s00.example", "secret.example", "private.example", "public.example"}, rows(second.body)); diff != "" {
		t.Errorf("page 2: mismatch (-want +got)\n%s", diff)
	}
	mustContain(t, "pager", second.body, `<a href="/" rel="prev">Previous page</a>`)
	mustContain(t, "past the end", mainText(c.get("/?page=9").body), "There are no websites on this page.")
	if got := rows(c.get("/?q=s0&page=x").body); !slices.Equal(got, []string{"s09.example", "s08.example", "s07.example", "s06.example", "s05.example", "s04.example", "s03.example", "s02.example", "s01.example", "s00.example"}) {
		t.Errorf("search s0: %q", got)
	}

	// A new account sees the way to its first website.
	fresh, key, err := identity.Must(f.e).CreateAccount(ctx, "New", "new@example.org")
	if err != nil {
		t.Fatal(err)
	}
	_ = fresh
	nc := f.client()
	nc.signIn(key)
	mustContain(t, "empty list", mainText(nc.get("/").body), "You have no websites yet. Add your first website")
	if strings.Contains(nc.get("/").body, `id="q"`) {
		t.Error("an empty list has a search box")
	}
}

func TestZones(t *testing.T) {
	if len(zones) < 300 {
		t.Fatalf("%d zones, want the IANA list", len(zones))
	}
	names := make([]string, len(zones))
	for i, z := range zones {
		names[i] = z.Name
		if _, err := time.LoadLocation(z.Name); err != nil {
			t.Errorf("zone %s: %v", z.Name, err)
		}
		if z.Label == "" {
			t.Errorf("zone %s has no label", z.Name)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Error("the zones are not sorted and unique")
	}
	for _, n := range []string{"UTC", "Europe/Berlin", "Europe/Oslo", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s is missing", n)
		}
	}
}

func TestFlash(t *testing.T) {
	f := newFixture(t)
	rec := httptest.NewRecorder()
	msg := "The goal a|b|c was added."
	f.p.setFlash(rec, msg)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, ck := range rec.Result().Cookies() {
		req.AddCookie(ck)
	}
	if got := f.p.takeFlash(httptest.NewRecorder(), req); got != msg {
		t.Errorf("takeFlash = %q, want %q", got, msg)
	}
	// A notice of another purpose, or expired, says nothing.
	for name, v := range map[string]string{
		"session": f.p.sign(purposeSession, "x", "y"),
		"expired": f.p.sign(purposeFlash, strconv.FormatInt(testNow.Unix()-1, 10), "eA"),
		"garbage": "x.y",
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(&http.Cookie{Name: flashCookie, Value: v})
		if got := f.p.takeFlash(httptest.NewRecorder(), req); got != "" {
			t.Errorf("%s: takeFlash = %q, want none", name, got)
		}
	}
	if got := quote(strings.Repeat("é", 100)); utf8Len(got) != maxFlashRunes {
		t.Errorf("quote: %d characters, want %d", utf8Len(got), maxFlashRunes)
	}
}

func utf8Len(s string) int { return len([]rune(s)) }

// TestGoalFormFitsValidGoal: the goal form takes a goal at the engine's
// limits (a display name of 2,006 three-byte characters is 18 KB
// form-encoded).
func TestGoalFormFitsValidGoal(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	goals := sitePath(f.public.ID, "/goals")
	name := strings.Repeat("€", 2006)
	res := c.post(goals, url.Values{"csrf": {c.csrfFor(goals, goals)}, "kind": {"event"}, "event_name": {"Signup"}, "event_display": {name}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("a valid goal: status %d, want 303\n%s", res.status, mainText(res.body))
	}
}

// TestDeleteIDN: a website stored as punycode is deleted by typing its
// domain as people write it.
func TestDeleteIDN(t *testing.T) {
	f := newFixture(t)
	c := f.signedIn()
	domain := "Bücher.example"
	web, err := f.e.Owner(f.owner.ID).CreateWebsite(context.Background(), engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	del := sitePath(web.ID, "/delete")
	if res := c.post(del, url.Values{"csrf": {c.csrfFor(del, del)}, "domain": {"bücher.example"}}); res.status != http.StatusSeeOther {
		t.Fatalf("delete by the IDN: status %d\n%s", res.status, mainText(res.body))
	}
	if _, err := f.e.Owner(f.owner.ID).Website(context.Background(), web.ID); err == nil {
		t.Error("the website is still there")
	}
}
