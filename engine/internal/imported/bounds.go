package imported

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/invalid"
)

// CheckRoom refuses import d if the website's imports, list, have no room
// for it (CheckBounds).
func CheckRoom(list []*Data, d *Data) error {
	return CheckBounds(len(list), Rows(list)+d.Rows)
}

// CheckBounds refuses, as a validation error under "file", an import that
// would give a website more than MaxImports imports or MaxRows rows.
func CheckBounds(imports, rows int) error {
	if imports >= MaxImports {
		return invalid.Of("file", fmt.Sprintf("The website has %d imports, the most it may have; delete one first.", MaxImports))
	}
	if rows > MaxRows {
		return invalid.Of("file", fmt.Sprintf("The website's imports would hold %d rows, more than %d; delete an import first.", rows, MaxRows))
	}
	return nil
}
