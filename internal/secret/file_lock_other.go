//go:build !unix

package secret

import "sync"

var fileStoreLock sync.Mutex

// locked runs fn holding a lock of this process only: without flock, processes sharing a
// directory are not kept apart.
func (s *FileStore) locked(fn func() error) error {
	fileStoreLock.Lock()
	defer fileStoreLock.Unlock()
	return fn()
}
