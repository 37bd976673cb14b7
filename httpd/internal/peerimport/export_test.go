package peerimport

// SetUmamiTotal sets the most sessions and event properties one import's
// files hold together, and returns the old bound.
func SetUmamiTotal(n int) int {
	old := umamiTotal
	umamiTotal = n
	return old
}
