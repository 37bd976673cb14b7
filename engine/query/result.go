package query

// Goal is a conversion goal of a website (SPEC §10.1): a custom-event goal
// (EventName, optionally with a revenue Currency) or a pageview goal
// (PagePath, where "*" and "**" match any run of characters).
type Goal struct {
	ID uint64 `json:"id"`
	// DisplayName is how queries name the goal (event:goal). Default: the
	// event name, or "Visit " + PagePath.
	DisplayName string `json:"display_name"`
	EventName   string `json:"event_name,omitempty"`
	PagePath    string `json:"page_path,omitempty"`
	// Currency is the ISO 4217 code of a revenue goal; only events whose
	// unit is this currency add to its revenue.
	Currency string `json:"currency,omitempty"`
}

// MetricWarning says why a metric is null (revenue metrics).
type MetricWarning struct {
	Code    string `json:"code"`
	Warning string `json:"warning"`
}

// Revenue is a revenue metric's value.
type Revenue struct {
	Value    float64 `json:"value"`
	Currency string  `json:"currency"`
	Short    string  `json:"short"`
	Long     string  `json:"long"`
}
