//go:build unix

package secret

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// locked runs fn holding the store directory's lock, an exclusive flock on <dir>/.lock that
// every process using the directory takes (the operator, and landlordctl on the same host): a
// conditional delete then compares and removes with no write between. The name starts with a
// dot, which no namespace can.
func (s *FileStore) locked(fn func() error) error {
	f, err := os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening the secret store lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("taking the secret store lock: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	return fn()
}
