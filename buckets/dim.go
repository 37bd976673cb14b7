package buckets

import "strconv"

// Dim is a dimension whose values are counted in a [Day].
//
// The first dimensions count pageviews, visits or events; Browser and all
// after it count unique visitors of the day (a visitor counts once per day,
// with the values of its first pageview): see [Dim.PerVisitor].
type Dim uint8

// The dimensions, in the order of their encoding. New dimensions are only
// ever added before NumDims.
const (
	Page        Dim = iota // pageviews per page (path and query)
	LandingPage            // visits per landing page
	Referrer               // visits per referring host ("" for direct)
	Campaign               // visits per utm_campaign
	Event                  // events per "name:value:unit"
	Browser                // unique visitors of the day, this and all below
	OS
	Device
	Resolution
	Language
	Country
	Continent
	City
	NumDims // the number of dimensions; not a dimension
)

var dimNames = [NumDims]string{
	Page:        "page",
	LandingPage: "landing_page",
	Referrer:    "referrer",
	Campaign:    "campaign",
	Event:       "event",
	Browser:     "browser",
	OS:          "os",
	Device:      "device",
	Resolution:  "resolution",
	Language:    "language",
	Country:     "country",
	Continent:   "continent",
	City:        "city",
}

// String returns the name of d as used by the statistics API ("page",
// "landing_page", "referrer", ...), or "Dim(n)" for an invalid d.
func (d Dim) String() string {
	if d < NumDims {
		return dimNames[d]
	}
	return "Dim(" + strconv.Itoa(int(d)) + ")"
}

// ParseDim returns the dimension named s (exactly as [Dim.String] writes
// it), and false if there is none.
func ParseDim(s string) (Dim, bool) {
	for d, name := range dimNames {
		if name == s {
			return Dim(d), true
		}
	}
	return 0, false
}

// PerVisitor reports whether d counts unique visitors of the day (Browser
// through City) rather than pageviews, visits or events.
func (d Dim) PerVisitor() bool {
	return d >= Browser && d < NumDims
}
