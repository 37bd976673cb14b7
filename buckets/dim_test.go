package buckets

import "testing"

func TestDim(t *testing.T) {
	tests := []struct {
		dim        Dim
		name       string
		perVisitor bool
	}{
		{dim: Page, name: "page"},
		{dim: LandingPage, name: "landing_page"},
		{dim: Referrer, name: "referrer"},
		{dim: Campaign, name: "campaign"},
		{dim: Event, name: "event"},
		{dim: Browser, name: "browser", perVisitor: true},
		{dim: OS, name: "os", perVisitor: true},
		{dim: Device, name: "device", perVisitor: true},
		{dim: Resolution, name: "resolution", perVisitor: true},
		{dim: Language, name: "language", perVisitor: true},
		{dim: Country, name: "country", perVisitor: true},
		{dim: Continent, name: "continent", perVisitor: true},
		{dim: City, name: "city", perVisitor: true},
	}
	if len(tests) != int(NumDims) {
		t.Fatalf("%d dims tested, NumDims = %d", len(tests), NumDims)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.dim.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got, ok := ParseDim(tt.name); !ok || got != tt.dim {
				t.Errorf("ParseDim(%q) = %v, %v; want %v, true", tt.name, got, ok, tt.dim)
			}
			if got := tt.dim.PerVisitor(); got != tt.perVisitor {
				t.Errorf("PerVisitor() = %v, want %v", got, tt.perVisitor)
			}
		})
	}
	for _, s := range []string{"", "Page", "pages", "pageviews", "visitors", "NumDims"} {
		if d, ok := ParseDim(s); ok {
			t.Errorf("ParseDim(%q) = %v, true; want false", s, d)
		}
	}
	if got, want := NumDims.String(), "Dim(13)"; got != want {
		t.Errorf("NumDims.String() = %q, want %q", got, want)
	}
	if NumDims.PerVisitor() {
		t.Error("NumDims.PerVisitor() = true")
	}
}
