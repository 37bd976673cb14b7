package paging_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine/internal/paging"
)

func TestBounds(t *testing.T) {
	type out struct{ Per, Page, Last, Lo, Hi int }
	for _, tc := range []struct {
		name                 string
		total, perPage, page int
		want                 out
	}{
		{name: "defaults", total: 25, want: out{Per: 10, Page: 1, Last: 3, Lo: 0, Hi: 10}},
		{name: "last page", total: 25, perPage: 10, page: 3, want: out{Per: 10, Page: 3, Last: 3, Lo: 20, Hi: 25}},
		{name: "past the end", total: 25, perPage: 10, page: 9, want: out{Per: 10, Page: 9, Last: 3, Lo: 25, Hi: 25}},
		{name: "empty", total: 0, perPage: 5, page: 1, want: out{Per: 5, Page: 1, Last: 1, Lo: 0, Hi: 0}},
		{name: "huge page", total: 3, perPage: 2, page: math.MaxInt, want: out{Per: 2, Page: math.MaxInt, Last: 2, Lo: 3, Hi: 3}},
		{name: "huge per page", total: 3, perPage: math.MaxInt, page: 1, want: out{Per: math.MaxInt, Page: 1, Last: 1, Lo: 0, Hi: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got out
			got.Per, got.Page, got.Last, got.Lo, got.Hi = paging.Bounds(tc.total, tc.perPage, tc.page)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
