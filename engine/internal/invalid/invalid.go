package invalid

import "strings"

// Field is one invalid field with a message in the wording of the API's 422
// answers ("The domain field is required.").
type Field struct {
	Field string
	Msg   string
}

// Error reports invalid input field by field. Use errors.As.
type Error struct {
	Fields []Field
}

// Of returns an *Error of one field.
func Of(field, msg string) *Error { return &Error{Fields: []Field{{Field: field, Msg: msg}}} }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("engine: invalid input:")
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(" ")
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Msg)
	}
	return b.String()
}

// Add records a message for field.
func (e *Error) Add(field, msg string) {
	e.Fields = append(e.Fields, Field{Field: field, Msg: msg})
}

// Err returns e when it holds a field, else nil (a nil error, not a nil
// *Error).
func (e *Error) Err() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
}
