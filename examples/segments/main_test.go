package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	want := `German mobile visitors today, by source:
source          visitors  bounce  duration
Google                 2     50%       45s
Direct / None          1      0%      180s
Hacker News            1    100%        0s
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
