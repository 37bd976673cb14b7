package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ParseQuery decodes a Stats API v2 request body into a Query, checking it
// as Plausible's JSON schema and parser do: it returns a *QueryError with
// Plausible's message on a schema violation (all of them, joined with "\n"),
// an unknown top-level key, a malformed date range, a non-string clause or a
// country that is not two letters. It fills in the defaults of pagination.
// It does not know the website: Validate and Resolve do the rest.
func ParseQuery(body []byte) (Query, error) {
	if len(body) > MaxQueryBytes {
		return Query{}, &QueryError{Msg: fmt.Sprintf("The query is larger than %d bytes.", MaxQueryBytes), Limit: "MaxQueryBytes"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Query{}, &QueryError{Msg: "Invalid JSON in request body."}
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return Query{}, &QueryError{Msg: "Invalid JSON in request body."}
	}
	var s schemaCheck
	s.root(v)
	if s.limit != "" {
		return Query{}, &QueryError{Msg: s.limitMsg, Limit: s.limit}
	}
	if len(s.errs) > 0 {
		return Query{}, &QueryError{Msg: strings.Join(s.errs, "\n")}
	}
	return parseChecked(v.(map[string]any))
}

// schemaCheck collects the errors ex_json_schema reports for Plausible's
// public query schema, in its order.
type schemaCheck struct {
	errs     []string
	limit    string // a webstats bound that bit, reported instead of errs
	limitMsg string
}

func (s *schemaCheck) add(path, msg string) { s.errs = append(s.errs, path+": "+msg) }

func (s *schemaCheck) bite(limit, msg string) {
	if s.limit == "" {
		s.limit, s.limitMsg = limit, msg
	}
}

// queryKeys are the schema's properties, in the order ex_json_schema visits
// them (a small Elixir map iterates its keys sorted).
var queryKeys = []string{"date_range", "dimensions", "filters", "include", "metrics", "order_by", "pagination", "site_id"}

func (s *schemaCheck) root(v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add("#", schemaTypeMismatch("Object", v))
		return
	}
	for _, k := range queryKeys {
		if x, ok := obj[k]; ok {
			s.property(k, x)
		}
	}
	s.additional("#", obj, queryKeys)
	var missing []string
	for _, k := range []string{"site_id", "metrics", "date_range"} {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		s.add("#", "Required property "+missing[0]+" was not present.")
	default:
		s.add("#", "Required properties "+strings.Join(missing, ", ")+" were not present.")
	}
}

// additional reports the keys of obj that known does not list.
func (s *schemaCheck) additional(path string, obj map[string]any, known []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.add(path+"/"+k, "Schema does not allow additional properties.")
	}
}

func (s *schemaCheck) property(key string, v any) {
	path := "#/" + key
	switch key {
	case "site_id":
		if _, ok := v.(string); !ok {
			s.add(path, schemaTypeMismatch("String", v))
		}
	case "metrics":
		arr, ok := v.([]any)
		for i, m := range arr {
			if name, ok := m.(string); !ok || !isQueryMetric(name) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid metric "+elixirInspect(m))
			}
		}
		if ok && len(arr) < 1 {
			s.add(path, "Expected a minimum of 1 items but got 0.")
		}
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
		}
		if ok && !uniqueJSONValues(arr) {
			s.add(path, "Expected items to be unique but they were not.")
		}
	case "date_range":
		if !dateRangeShape(v) {
			s.add(path, "Invalid date range "+elixirInspect(v))
		}
	case "dimensions":
		arr, ok := v.([]any)
		for i, d := range arr {
			if name, ok := d.(string); !ok || !isQueryDimension(name) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid dimension "+elixirInspect(d))
			}
		}
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
		}
		if ok && !uniqueJSONValues(arr) {
			s.add(path, "Expected items to be unique but they were not.")
		}
	case "filters":
		arr, ok := v.([]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
			return
		}
		for i, f := range arr {
			if !s.filterTree(f, 0) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid filter "+elixirInspect(f))
			}
		}
	case "order_by":
		arr, ok := v.([]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
			return
		}
		for i, e := range arr {
			s.orderByEntry(path+"/"+strconv.Itoa(i), e)
		}
	case "include":
		s.include(path, v)
	case "pagination":
		s.pagination(path, v)
	}
}

// include checks the include object: boolean flags, no other keys.
func (s *schemaCheck) include(path string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add(path, schemaTypeMismatch("Object", v))
		return
	}
	known := []string{"imports", "time_labels", "total_rows"}
	for _, k := range known {
		if x, ok := obj[k]; ok {
			if _, ok := x.(bool); !ok {
				s.add(path+"/"+k, schemaTypeMismatch("Boolean", x))
			}
		}
	}
	s.additional(path, obj, known)
}

// pagination checks the pagination object: limit 1 to MaxQueryLimit, offset
// at least 0, no other keys.
func (s *schemaCheck) pagination(path string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add(path, schemaTypeMismatch("Object", v))
		return
	}
	if x, ok := obj["limit"]; ok {
		s.integer(path+"/limit", x, 1, MaxQueryLimit)
	}
	if x, ok := obj["offset"]; ok {
		s.integer(path+"/offset", x, 0, -1)
	}
	s.additional(path, obj, []string{"limit", "offset"})
}

// integer checks an integer property with a minimum and a maximum (max < 0:
// none), in ex_json_schema's keyword order: maximum, minimum, type.
func (s *schemaCheck) integer(path string, v any, lo, hi int) {
	n, isNum := v.(json.Number)
	if isNum {
		f, err := strconv.ParseFloat(string(n), 64)
		if err == nil || errors.Is(err, strconv.ErrRange) {
			if hi >= 0 && f > float64(hi) {
				s.add(path, "Expected the value to be <= "+strconv.Itoa(hi))
			}
			if f < float64(lo) {
				s.add(path, "Expected the value to be >= "+strconv.Itoa(lo))
			}
		}
	}
	if !isNum || !isJSONInteger(n) {
		s.add(path, schemaTypeMismatch("Integer", v))
	}
}

func (s *schemaCheck) orderByEntry(path string, v any) {
	arr, ok := v.([]any)
	if !ok {
		s.add(path, schemaTypeMismatch("Array", v))
		return
	}
	if len(arr) > 0 {
		if k, ok := arr[0].(string); !ok || !(isQueryMetric(k) || isFilterDimension(k) || isTimeDimension(k)) {
			s.add(path+"/0", "Invalid value in order_by "+elixirInspect(arr[0]))
		}
	}
	if len(arr) > 1 {
		if d, ok := arr[1].(string); !ok || (d != "asc" && d != "desc") {
			s.add(path+"/1", "Value is not allowed in enum.")
		}
	}
	if len(arr) > 2 {
		s.add(path, "Schema does not allow additional items.")
		s.add(path, fmt.Sprintf("Expected a maximum of 2 items but got %d.", len(arr)))
	}
	if len(arr) < 2 {
		s.add(path, fmt.Sprintf("Expected a minimum of 2 items but got %d.", len(arr)))
	}
}

// filterTree reports whether v is a filter tree of the public schema:
// exactly one of its alternatives matches, as they are disjoint.
func (s *schemaCheck) filterTree(v any, depth int) bool {
	if depth > MaxFilterDepth {
		s.bite("MaxFilterDepth", fmt.Sprintf("Invalid filters. Filters may nest at most %d levels deep.", MaxFilterDepth))
		return false
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	op, _ := arr[0].(string)
	switch op {
	case "and", "or":
		children, ok := arr[len(arr)-1].([]any)
		if len(arr) != 2 || !ok || len(children) == 0 {
			return false
		}
		for _, c := range children {
			if !s.filterTree(c, depth+1) {
				return false
			}
		}
		return true
	case "not", "has_done", "has_not_done":
		return len(arr) == 2 && s.filterTree(arr[1], depth+1)
	case "is", "contains", "is_not", "contains_not", "matches", "matches_not":
	default:
		return false
	}
	if len(arr) < 3 || len(arr) > 4 {
		return false
	}
	dim, _ := arr[1].(string)
	clauses, ok := arr[2].([]any)
	if !ok {
		return false
	}
	for _, c := range clauses {
		n, isNum := c.(json.Number)
		if _, isStr := c.(string); !isStr && !(isNum && isJSONInteger(n)) {
			return false
		}
	}
	switch {
	case op == "is" && dim == "segment": // ids; the parser wants integers
		return len(arr) == 3
	case op == "is" || op == "contains":
		if !isFilterDimension(dim) && dim != "event:goal" {
			return false
		}
	case !isFilterDimension(dim):
		return false
	}
	if len(arr) == 4 {
		if op == "matches" || op == "matches_not" {
			return false
		}
		mods, ok := arr[3].(map[string]any)
		if !ok {
			return false
		}
		for k, x := range mods {
			if _, isBool := x.(bool); k != "case_sensitive" || !isBool {
				return false
			}
		}
	}
	return true
}

// dateRangeShape reports whether v passes the schema's date_range: a
// shorthand, or two dates, or two datetimes.
func dateRangeShape(v any) bool {
	switch v := v.(type) {
	case string:
		switch v {
		case "day", "24h", "month", "year", "all":
			return true
		}
		digits, ok := strings.CutSuffix(v, "mo")
		if !ok {
			digits, ok = strings.CutSuffix(v, "d")
		}
		return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
	case []any:
		if len(v) != 2 {
			return false
		}
		a, ok1 := v[0].(string)
		b, ok2 := v[1].(string)
		return ok1 && ok2 && (isDateShape(a) && isDateShape(b) || isDatetimeShape(a) && isDatetimeShape(b))
	}
	return false
}

// isDateShape: YYYY-MM-DD (the calendar is checked by the parser).
func isDateShape(s string) bool {
	return len(s) == 10 && asciiDigitsAt(s, 0, 4) && s[4] == '-' && asciiDigitsAt(s, 5, 2) && s[7] == '-' && asciiDigitsAt(s, 8, 2)
}

// isDatetimeShape: YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM], the offset hours below
// 24. The parser then requires the offset.
func isDatetimeShape(s string) bool {
	if len(s) < 19 || !isDateShape(s[:10]) || s[10] != 'T' || !asciiDigitsAt(s, 11, 2) || s[13] != ':' ||
		!asciiDigitsAt(s, 14, 2) || s[16] != ':' || !asciiDigitsAt(s, 17, 2) {
		return false
	}
	rest := s[19:]
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	switch {
	case rest == "" || rest == "Z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && asciiDigitsAt(rest, 1, 2) && rest[3] == ':' && asciiDigitsAt(rest, 4, 2):
		return rest[1:3] <= "23" && rest[4:6] <= "59"
	}
	return false
}

func asciiDigitsAt(s string, at, n int) bool {
	if at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isJSONInteger reports a JSON number without fraction or exponent, which is
// what Jason decodes to an Elixir integer.
func isJSONInteger(n json.Number) bool {
	s := strings.TrimPrefix(string(n), "-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// uniqueJSONValues reports JSON values pairwise distinct (1 and 1.0 differ, as
// Elixir's integers and floats do).
func uniqueJSONValues(arr []any) bool {
	seen := make(map[string]bool, len(arr))
	for _, v := range arr {
		k := jsonIdentity(v)
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// jsonIdentity is a JSON value's identity for uniqueness: its encoding (object
// keys sorted by encoding/json).
func jsonIdentity(v any) string {
	if n, ok := v.(json.Number); ok {
		if isJSONInteger(n) {
			return "i" + strings.TrimLeft(string(n), "0")
		}
		f, _ := strconv.ParseFloat(string(n), 64)
		return "f" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func schemaTypeMismatch(want string, v any) string {
	return "Type mismatch. Expected " + want + " but got " + jsonTypeName(v) + "."
}

// jsonTypeName names v's JSON type as ex_json_schema does.
func jsonTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "Null"
	case bool:
		return "Boolean"
	case string:
		return "String"
	case json.Number:
		if isJSONInteger(v) {
			return "Integer"
		}
		return "Number"
	case []any:
		return "Array"
	case map[string]any:
		return "Object"
	}
	return "Unknown"
}
