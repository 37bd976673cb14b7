package query

import (
	"bytes"
	"encoding/json"
	"time"
)

// MarshalJSON writes the query as a request body, the form ParseQuery reads.
// Nil Metrics and a zero DateRange are left out (and reported missing by
// ParseQuery); nil OrderBy is left out (the default order).
func (q Query) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"site_id":`)
	writeQueryJSON(&b, q.SiteID)
	if q.Metrics != nil {
		b.WriteString(`,"metrics":`)
		writeQueryJSON(&b, q.Metrics)
	}
	if q.DateRange != (DateRange{}) {
		b.WriteString(`,"date_range":`)
		writeQueryJSON(&b, q.DateRange)
	}
	if q.Filters != nil {
		b.WriteString(`,"filters":`)
		writeQueryJSON(&b, q.Filters)
	}
	if q.Dimensions != nil {
		b.WriteString(`,"dimensions":`)
		writeQueryJSON(&b, q.Dimensions)
	}
	if q.OrderBy != nil {
		b.WriteString(`,"order_by":`)
		writeQueryJSON(&b, q.OrderBy)
	}
	b.WriteString(`,"include":`)
	writeQueryJSON(&b, q.Include)
	b.WriteString(`,"pagination":`)
	writeQueryJSON(&b, q.Pagination)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeQueryJSON appends v's encoding; the model's values always encode.
func writeQueryJSON(b *bytes.Buffer, v any) {
	out, err := json.Marshal(v)
	if err != nil {
		panic("engine: query model does not encode: " + err.Error())
	}
	b.Write(out)
}

// datetimeLayout is how ranges of instants are written: seconds and a
// numeric offset, "+00:00" for UTC, as Plausible's echo shows them.
const datetimeLayout = "2006-01-02T15:04:05-07:00"

// formatQueryInstant writes t with its offset, or in UTC when the offset has
// seconds (historical local mean times), which the layout cannot carry.
func formatQueryInstant(t time.Time) string {
	if _, off := t.Zone(); off%60 != 0 {
		t = t.UTC()
	}
	return t.Format(datetimeLayout)
}

// MarshalJSON writes the range as the API takes it: the shorthand string, or
// two dates, or two datetimes.
func (d DateRange) MarshalJSON() ([]byte, error) {
	switch {
	case d.Period != "":
		return json.Marshal(d.Period)
	case !d.From.IsZero():
		return json.Marshal([2]string{formatQueryInstant(d.From), formatQueryInstant(d.To)})
	}
	return json.Marshal([2]string{d.FromDay.String(), d.ToDay.String()})
}

// MarshalJSON writes the filter in the API's array form: [op, dimension,
// clauses] (plus {"case_sensitive": false}), [op, [children…]] for and/or,
// [op, child] for not/has_done/has_not_done.
func (f Filter) MarshalJSON() ([]byte, error) {
	return json.Marshal(f.raw())
}

// raw is the filter as decoded JSON values.
func (f Filter) raw() []any {
	switch f.Op {
	case "and", "or":
		children := make([]any, len(f.Children))
		for i, c := range f.Children {
			children[i] = c.raw()
		}
		return []any{f.Op, children}
	case "not", "has_done", "has_not_done":
		out := []any{f.Op}
		for _, c := range f.Children {
			out = append(out, c.raw())
		}
		return out
	}
	clauses := make([]any, len(f.Clauses))
	for i, c := range f.Clauses {
		if n := json.Number(c); f.IntClauses && isJSONInteger(n) {
			clauses[i] = n
		} else {
			clauses[i] = c
		}
	}
	out := []any{f.Op, f.Dimension, clauses}
	if f.CaseInsensitive {
		out = append(out, map[string]any{"case_sensitive": false})
	}
	for _, c := range f.Children { // a leaf with children is invalid; keep it so
		out = append(out, c.raw())
	}
	return out
}

// MarshalJSON writes ["key", "asc"|"desc"].
func (o OrderBy) MarshalJSON() ([]byte, error) {
	dir := "asc"
	if o.Desc {
		dir = "desc"
	}
	return json.Marshal([2]string{o.Key, dir})
}
