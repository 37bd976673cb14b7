package imported

import (
	"testing"

	"github.com/webstats/webstats/engine/plausiblezip"
)

// TestCache: the website just set is kept whatever its size, the least
// recently used others are dropped until the cache is within its limit,
// and the last id given survives a replaced list but not a drop.
func TestCache(t *testing.T) {
	imp := func(id uint32, bytes int64) *Data {
		return &Data{Import: Import{ID: id}, bytes: bytes, tables: map[string][]plausiblezip.Row{"imported_visitors": make([]plausiblezip.Row, bytes)}}
	}
	var c Cache
	c.Set(1, []*Data{imp(1, 40)}, 0, 100)
	c.Set(2, []*Data{imp(3, 40)}, 7, 100)
	if _, ok := c.Get(1); !ok { // 1 is used after 2
		t.Fatal("website 1 not cached")
	}
	c.Set(3, []*Data{imp(1, 40)}, 0, 100) // 2, the least recently used, goes
	if _, ok := c.Get(2); ok {
		t.Fatal("website 2 still cached")
	}
	if sites, rows := c.Resident(); sites != 2 || rows != 80 {
		t.Fatalf("resident: %d websites, %d rows; want 2, 80", sites, rows)
	}
	c.Set(4, []*Data{imp(1, 500)}, 0, 100) // over the limit alone: kept
	if sites, _ := c.Resident(); sites != 1 {
		t.Fatalf("%d websites resident, want only the last set", sites)
	}
	c.Set(4, []*Data{imp(5, 1)}, 0, 100)
	c.Set(4, nil, 0, 100) // its imports deleted: ids are not given again
	if got := c.Last(4); got != 5 {
		t.Fatalf("last id %d, want 5", got)
	}
	c.Drop(4)
	if got := c.Last(4); got != 0 {
		t.Fatalf("last id %d after Drop, want 0", got)
	}
}
