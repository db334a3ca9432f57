package secret

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CheckDurable refuses a file store directory whose contents would not outlive the pod: an
// emptyDir, a memory-backed filesystem, or the container's own filesystem (a path that is not a
// mount). Such a store starts empty after every restart or rollout; the operator then finds
// none of the credentials and shared secrets it stored. The operator checks this when it runs in
// a pod; on a workstation any directory will do.
func CheckDurable(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading the mounts of the operator's container: %w", err)
	}
	defer f.Close()
	return checkDurable(dir, f)
}

const durableAdvice = "Mount a PersistentVolumeClaim there (config/manager does, ReadWriteOncePod for a single writer), " +
	"or use the gcs backend (secrets.store.backend: gcs), the production choice for more than one replica"

func checkDurable(dir string, mountinfo io.Reader) error {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	dir = filepath.Clean(dir)
	var best *mount
	scanner := bufio.NewScanner(mountinfo)
	for scanner.Scan() {
		m, ok := parseMount(scanner.Text())
		if !ok || !within(dir, m.point) {
			continue
		}
		if best == nil || len(m.point) >= len(best.point) {
			best = &m
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading the mounts of the operator's container: %w", err)
	}
	switch {
	case best == nil || best.point == "/":
		return fmt.Errorf("secret store directory %s is not a mounted volume: it is on the container's own filesystem, which is lost with the pod. %s", dir, durableAdvice)
	case strings.Contains(best.root, "kubernetes.io~empty-dir"):
		return fmt.Errorf("secret store directory %s is on an emptyDir volume, which is lost with the pod. %s", dir, durableAdvice)
	case best.fstype == "tmpfs" || best.fstype == "ramfs":
		return fmt.Errorf("secret store directory %s is on a memory-backed filesystem (%s), which is lost with the pod. %s", dir, best.fstype, durableAdvice)
	}
	return nil
}

// mount is one line of /proc/self/mountinfo: where the mount is, what part of its source it
// shows, and its filesystem type.
type mount struct {
	root, point, fstype string
}

// parseMount reads "36 35 98:0 /root /point opts [optional...] - fstype source superopts".
func parseMount(line string) (mount, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i, f := range fields {
		if f == "-" {
			sep = i
			break
		}
	}
	if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
		return mount{}, false
	}
	return mount{root: unescape(fields[3]), point: unescape(fields[4]), fstype: fields[sep+1]}, true
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func within(dir, point string) bool {
	if point == "/" {
		return true
	}
	return dir == point || strings.HasPrefix(dir, point+"/")
}
