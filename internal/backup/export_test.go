package backup

import (
	"context"
	"os"
	"path/filepath"
)

// RestoreMySQLScript runs script into the target as a restore runs a dump, for the tests of what a
// dump may do.
func RestoreMySQLScript(ctx context.Context, tools Tools, t Target, script string) error {
	work, err := newWorkDir("test")
	if err != nil {
		return err
	}
	defer work.remove()
	file := filepath.Join(string(work), "dump.sql")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		return err
	}
	return restoreMySQL(ctx, tools, work, t, file, false)
}
