package norm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEventName(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{in: "Signup", want: "Signup", wantOK: true},
		{in: "Payment:Card", want: "Payment Card", wantOK: true},
		{in: "  Sign up \n", want: "Sign up", wantOK: true},
		{in: "a:b:c", want: "a b c", wantOK: true},
		{in: ":Signup:", want: "Signup", wantOK: true},
		{in: "Anmeldung ✓", want: "Anmeldung ✓", wantOK: true},
		{in: "bad\xffutf8", want: "bad\uFFFDutf8", wantOK: true},
		{in: strings.Repeat("ä", 300), want: strings.Repeat("ä", 255), wantOK: true},
		{in: "", wantOK: false},
		{in: "   ", wantOK: false},
		{in: ":", wantOK: false},
		{in: " : : ", wantOK: false},
		// Control characters become spaces; bidi controls are removed.
		{in: "Sign\x00up", want: "Sign up", wantOK: true},
		{in: "a\tb\nc\rd\ve\ff\bg\x1fh\x7fi", want: "a b c d e f g h i", wantOK: true},
		{in: "C1\u0085x\u009b", want: "C1 x", wantOK: true},
		{in: "\u202Egnp.exe\u202C", want: "gnp.exe", wantOK: true},
		{in: "a\u200Eb\u200Fc\u061Cd\u2066e\u2067f\u2068g\u2069h\u202Ai\u202Bj\u202Dk", want: "abcdefghijk", wantOK: true},
		{in: "\x00\x01\u202E", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := EventName(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" || ok != tt.wantOK {
				t.Errorf("EventName(%q) = %q, %v, want ok %v; mismatch (-want +got):\n%s", tt.in, got, ok, tt.wantOK, diff)
			}
		})
	}
}

func TestEventValue(t *testing.T) {
	tests := []struct {
		raw  string // raw JSON token; "<nil>" for a nil RawMessage
		want string
	}{
		{raw: `5`, want: "5"},
		{raw: `5.0`, want: "5"},
		{raw: `5.50`, want: "5.5"},
		{raw: `1e3`, want: "1000"},
		{raw: `1E+3`, want: "1000"},
		{raw: `2.5e-1`, want: "0.25"},
		{raw: `0.1`, want: "0.1"},
		{raw: `0.00000001`, want: "0.00000001"},
		{raw: `19.99`, want: "19.99"},
		{raw: `1234567890`, want: "1234567890"},
		{raw: `12345678.5`, want: "12345678.5"},
		{raw: `123456789.5`, want: ""},
		{raw: ` 42 `, want: "42"},
		{raw: `"5"`, want: "5"},
		{raw: `"5.50"`, want: "5.50"},
		{raw: `"0.5"`, want: "0.5"},
		{raw: `"1234567890"`, want: "1234567890"},
		{raw: `"\u0035"`, want: "5"},

		{raw: `0`, want: ""},
		{raw: `-1`, want: ""},
		{raw: `-0`, want: ""},
		{raw: `0.0`, want: ""},
		{raw: `12345678901`, want: ""},
		{raw: `1234567890.5`, want: ""},
		{raw: `1e10`, want: ""},
		{raw: `1e400`, want: ""},
		{raw: `0.000000001`, want: ""},
		{raw: `1e-400`, want: ""},
		{raw: `"abc"`, want: ""},
		{raw: `"12345678901"`, want: ""},
		{raw: `"0"`, want: ""},
		{raw: `"0.00"`, want: ""},
		{raw: `"-1"`, want: ""},
		{raw: `"+5"`, want: ""},
		{raw: `"1e3"`, want: ""},
		{raw: `".5"`, want: ""},
		{raw: `"5."`, want: ""},
		{raw: `"5 "`, want: ""},
		{raw: `""`, want: ""},
		{raw: `"`, want: ""},
		{raw: `null`, want: ""},
		{raw: `true`, want: ""},
		{raw: `{"amount":5}`, want: ""},
		{raw: `[5]`, want: ""},
		{raw: `05`, want: ""},
		{raw: `5.`, want: ""},
		{raw: `0x10`, want: ""},
		{raw: `+5`, want: ""},
		{raw: `Infinity`, want: ""},
		{raw: ``, want: ""},
		{raw: `<nil>`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			var raw json.RawMessage
			if tt.raw != "<nil>" {
				raw = json.RawMessage(tt.raw)
			}
			if diff := cmp.Diff(tt.want, EventValue(raw)); diff != "" {
				t.Errorf("EventValue(%s) mismatch (-want +got):\n%s", tt.raw, diff)
			}
		})
	}
}

// TestEventValueDecoded checks EventValue on tokens as encoding/json hands
// them over in a struct field.
func TestEventValueDecoded(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{body: `{"name":"Payment","value":5,"unit":"USD"}`, want: "5"},
		{body: `{"name":"Payment","value": 5.0 ,"unit":"USD"}`, want: "5"},
		{body: `{"name":"Payment","value":"12.5"}`, want: "12.5"},
		{body: `{"name":"Payment","value":null}`, want: ""},
		{body: `{"name":"Payment"}`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var ev struct {
				Value json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal([]byte(tt.body), &ev); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, EventValue(ev.Value)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventUnit(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "USD", want: "USD"},
		{in: "", want: ""},
		{in: " EUR ", want: "EUR"},
		{in: "m:s", want: "m s"},
		{in: "US\x00D", want: "US D"},
		{in: "\u202EDSU", want: "DSU"},
		{in: "\x7f", want: ""},
		{in: strings.Repeat("u", 32), want: strings.Repeat("u", 32)},
		{in: strings.Repeat("€", 32), want: strings.Repeat("€", 32)},
		{in: strings.Repeat("u", 33), want: ""},
		{in: strings.Repeat("€", 33), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, EventUnit(tt.in)); diff != "" {
				t.Errorf("EventUnit(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestEventRow(t *testing.T) {
	tests := []struct {
		name, value, unit string // raw inputs
		want              string
	}{
		{name: "Payment", value: `5`, unit: "USD", want: "Payment:5:USD"},
		{name: "Signup", want: "Signup::"},
		{name: "Payment", value: `5.0`, unit: "USD", want: "Payment:5:USD"},
		{name: "Payment", value: `"abc"`, unit: "USD", want: "Payment::USD"},
		{name: "Payment", value: `0`, want: "Payment::"},
		{name: "Payment", value: `-1`, want: "Payment::"},
		{name: "Payment", value: `"12345678901"`, want: "Payment::"},
		{name: "Order:Paid", value: `9.90`, unit: "EUR:net", want: "Order Paid:9.9:EUR net"},
		{name: "Big", value: `1`, unit: strings.Repeat("x", 33), want: "Big:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			name, ok := EventName(tt.name)
			if !ok {
				t.Fatalf("EventName(%q) invalid", tt.name)
			}
			var raw json.RawMessage
			if tt.value != "" {
				raw = json.RawMessage(tt.value)
			}
			got := EventRow(name, EventValue(raw), EventUnit(tt.unit))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEventNameExact checks the name the segments, goals and the Plausible
// APIs keep (SPEC §2.4): ':' kept, the rest as EventName; and that StatName
// gives the phpAnalytics statistic's name from it.
func TestEventNameExact(t *testing.T) {
	tests := []struct {
		in       string
		want     string
		wantOK   bool
		wantStat string
	}{
		{in: "Outbound Link: Click", want: "Outbound Link: Click", wantOK: true, wantStat: "Outbound Link  Click"},
		{in: "Form: Submission", want: "Form: Submission", wantOK: true, wantStat: "Form  Submission"},
		{in: "File Download", want: "File Download", wantOK: true, wantStat: "File Download"},
		{in: "404", want: "404", wantOK: true, wantStat: "404"},
		{in: " a:b\tc ", want: "a:b c", wantOK: true, wantStat: "a b c"},
		{in: "Ä:\u202Eb", want: "Ä:b", wantOK: true, wantStat: "Ä b"},
		{in: ":", want: ":", wantOK: true, wantStat: ""},
		{in: " : : ", want: ": :", wantOK: true, wantStat: ""},
		{in: strings.Repeat(":", 300), want: strings.Repeat(":", 255), wantOK: true, wantStat: ""},
		{in: "", wantOK: false},
		{in: " \t\x00", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := EventNameExact(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("EventNameExact(%q) = %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
			if ok {
				if stat := StatName(got); stat != tt.wantStat {
					t.Errorf("StatName(%q) = %q, want %q", got, stat, tt.wantStat)
				}
				// The statistic's name is EventName's, when it has one.
				if name, ok := EventName(tt.in); ok && name != StatName(got) {
					t.Errorf("StatName(%q) = %q, EventName(%q) = %q", got, StatName(got), tt.in, name)
				}
			}
		})
	}
	if got := EventUnitExact("a:b"); got != "a:b" {
		t.Errorf(`EventUnitExact("a:b") = %q`, got)
	}
}
