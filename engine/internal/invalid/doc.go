// Package invalid reports input that fails validation, field by field, in
// the wording of the API's 422 answers.
//
// Package engine aliases its types (engine.ValidationError,
// engine.FieldError): callers find an *Error with errors.As. The zero Error
// holds no field; Err turns it into a nil error.
package invalid
