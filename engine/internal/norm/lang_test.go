package norm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLanguage(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "en-US,en;q=0.9", want: "en"},
		{in: "en", want: "en"},
		{in: "EN-us", want: "en"},
		{in: "de_DE", want: "de"},
		{in: "es-419,es;q=0.9", want: "es"},
		{in: "zh-Hant-TW,zh;q=0.9", want: "zh"},
		{in: "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5", want: "fr"},
		{in: "  pt-BR ,pt", want: "pt"},
		{in: "en;q=0.5, de;q=0.9", want: "de"},
		{in: "en;q=0.8, de;q=0.8", want: "en"},
		{in: "en;q=0, de;q=0.1", want: "de"},
		{in: "en; q = 0.5, fr", want: "fr"},
		{in: "deu", want: "de"},
		{in: "deu-AT", want: "de"},
		{in: "iw", want: "he"},
		{in: "en-QQ", want: "en"},
		{in: "garbage!!, it;q=0.5", want: "it"},
		{in: "en;q=abc, nl;q=0.2", want: "nl"},
		{in: "en;q=2, sv;q=0.3", want: "sv"},
		{in: "*, en;q=0.5", want: "en"},
		{in: "fil-PH, en;q=0.8", want: ""},
		{in: "gsw", want: ""},
		{in: "xx", want: ""},
		{in: "und", want: ""},
		{in: "und-US", want: ""},
		{in: "*", want: ""},
		{in: "", want: ""},
		{in: "garbage", want: ""},
		{in: ",,,;", want: ""},
		{in: "en;q=0", want: ""},
		{in: "1234", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Language(tt.in)); diff != "" {
				t.Errorf("Language(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.want, languageSlow(tt.in)); diff != "" {
				t.Errorf("languageSlow(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestLanguageFastPath checks the allocation-free path against the full parse
// for every 2-letter primary subtag, with and without a region.
func TestLanguageFastPath(t *testing.T) {
	regions := []string{"", "-US", "-GB", "-DE", "-CN", "-TW", "-RS", "-BA", "-NO", "-419", "-ZZ", "-QQ", "_BR"}
	if testing.Short() {
		regions = regions[:3]
	}
	for a := 'a'; a <= 'z'; a++ {
		for b := 'a'; b <= 'z'; b++ {
			for _, r := range regions {
				h := string([]rune{a, b}) + r + ",en;q=0.5"
				fast, ok := languageFast(h)
				if !ok {
					t.Fatalf("languageFast(%q) took the slow path", h)
				}
				if slow := languageSlow(h); fast != slow {
					t.Errorf("Language(%q): fast %q, slow %q", h, fast, slow)
				}
			}
		}
	}
}

func TestResolution(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "1920x1080", want: "1920x1080"},
		{in: "1x1", want: "1x1"},
		{in: "99999x99999", want: "99999x99999"},
		{in: "", want: ""},
		{in: "1920", want: ""},
		{in: "1920x", want: ""},
		{in: "x1080", want: ""},
		{in: "0x0", want: ""},
		{in: "1920x0", want: ""},
		{in: "01920x1080", want: ""},
		{in: "100000x1", want: ""},
		{in: "1920X1080", want: ""},
		{in: "1920 x 1080", want: ""},
		{in: "-1x5", want: ""},
		{in: "1x2x3", want: ""},
		{in: "１９２０x1080", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Resolution(tt.in)); diff != "" {
				t.Errorf("Resolution(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
