package plausiblezip

// The tables of an export and their columns, as Plausible writes them
// (lib/plausible/exports.ex, export_*_q) and reads them back
// (lib/plausible/imported/csv_importer.ex, input_structures). Columns an
// older export may lack are optional; a column no version writes is a
// wrong header.

// Metric indexes into Row.M: the canonical metrics of every table.
const (
	Visitors = iota
	Visits   // visits; entrances of entry pages; exits of exit pages
	Pageviews
	Bounces
	Duration // visit_duration, the sum of seconds
	Events
	NumMetrics
)

// colKind is how a column's value is read.
type colKind uint8

const (
	kindDim     colKind = iota // a string kept in Row.Dims
	kindUint                   // an unsigned integer
	kindNull                   // an unsigned integer or empty / \N (Nullable)
	kindDimUint                // an unsigned integer kept in Row.Dims (city)
)

// column is one column of a table.
type column struct {
	name     string
	kind     colKind
	optional bool
	dim      int // index in Row.Dims of a dimension column
	metric   int // index in Row.M of a metric column; -1: read, not kept
}

// Table is one table of an export.
type Table struct {
	// Name is the table's name, "imported_visitors" etc.
	Name string
	// Dims names Row.Dims in order.
	Dims []string
	cols []column
}

func dim(name string, i int) column { return column{name: name, kind: kindDim, dim: i, metric: -1} }
func met(name string, m int) column { return column{name: name, kind: kindUint, metric: m} }
func opt(c column) column           { c.optional = true; return c }
func unused(name string) column {
	return column{name: name, kind: kindNull, optional: true, metric: -1}
}

// sessionMetrics are the metric columns of the session tables (sources,
// locations, devices, browsers, operating systems).
func sessionMetrics() []column {
	return []column{met("visitors", Visitors), met("visits", Visits), met("visit_duration", Duration),
		met("bounces", Bounces), opt(met("pageviews", Pageviews))}
}

func table(name string, dims []column, metrics ...column) *Table {
	t := &Table{Name: name, cols: append([]column{{name: "date", metric: -1}}, dims...)}
	for _, c := range dims {
		t.Dims = append(t.Dims, c.name)
	}
	t.cols = append(t.cols, metrics...)
	return t
}

// Tables are the tables of an export, by name.
var Tables = map[string]*Table{}

func init() {
	for _, t := range []*Table{
		table("imported_visitors", nil,
			met("visitors", Visitors), met("pageviews", Pageviews), met("bounces", Bounces),
			met("visits", Visits), met("visit_duration", Duration)),
		table("imported_sources", []column{dim("source", 0), opt(dim("referrer", 1)), opt(dim("utm_source", 2)),
			dim("utm_medium", 3), dim("utm_campaign", 4), dim("utm_content", 5), dim("utm_term", 6)},
			sessionMetrics()...),
		table("imported_pages", []column{dim("hostname", 0), dim("page", 1)},
			opt(met("visits", Visits)), met("visitors", Visitors), met("pageviews", Pageviews),
			unused("total_scroll_depth"), unused("total_scroll_depth_visits"),
			unused("total_time_on_page"), unused("total_time_on_page_visits"),
			unused("scroll_depth"), unused("pageleave_visitors"), unused("exits"), unused("time_on_page")),
		table("imported_entry_pages", []column{dim("entry_page", 0)},
			met("visitors", Visitors), met("entrances", Visits), met("visit_duration", Duration),
			met("bounces", Bounces), opt(met("pageviews", Pageviews))),
		table("imported_exit_pages", []column{dim("exit_page", 0)},
			met("visitors", Visitors), opt(met("visit_duration", Duration)), met("exits", Visits),
			opt(met("bounces", Bounces)), opt(met("pageviews", Pageviews))),
		table("imported_custom_events", []column{dim("name", 0), dim("link_url", 1), dim("path", 2)},
			met("visitors", Visitors), met("events", Events)),
		table("imported_locations", []column{dim("country", 0), dim("region", 1),
			{name: "city", kind: kindDimUint, dim: 2, metric: -1}}, sessionMetrics()...),
		table("imported_devices", []column{dim("device", 0)}, sessionMetrics()...),
		table("imported_browsers", []column{dim("browser", 0), opt(dim("browser_version", 1))}, sessionMetrics()...),
		table("imported_operating_systems", []column{dim("operating_system", 0),
			opt(dim("operating_system_version", 1))}, sessionMetrics()...),
	} {
		Tables[t.Name] = t
	}
}
