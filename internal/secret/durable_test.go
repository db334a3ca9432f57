package secret

import (
	"strings"
	"testing"
)

// Mount tables as a container sees them, cut to the lines that matter.
const (
	overlayRoot = "1183 1090 0:311 / / rw,relatime master:443 - overlay overlay rw,lowerdir=/var/lib/containerd/l1\n"
	emptyDir    = "1201 1183 8:1 /var/lib/kubelet/pods/5d1c/volumes/kubernetes.io~empty-dir/secrets /var/lib/landlord/secrets rw,relatime - ext4 /dev/sda1 rw\n"
	memoryDir   = "1202 1183 0:320 / /var/lib/landlord/secrets rw,relatime - tmpfs tmpfs rw,size=65536k\n"
	claim       = "1203 1183 8:32 / /var/lib/landlord/secrets rw,relatime - ext4 /dev/sdc rw\n"
	configMap   = "1204 1183 0:321 / /etc/landlord ro,relatime - tmpfs tmpfs rw\n"
)

func TestCheckDurable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mounts    string
		dir       string
		wantError string
	}{
		{"a PersistentVolumeClaim's filesystem is durable", overlayRoot + configMap + claim, "/var/lib/landlord/secrets", ""},
		{"a directory below a claim's mount is durable", overlayRoot + claim, "/var/lib/landlord/secrets/prod", ""},
		{"an emptyDir is refused, saying what to do", overlayRoot + emptyDir, "/var/lib/landlord/secrets", "emptyDir"},
		{"a memory-backed volume is refused", overlayRoot + memoryDir, "/var/lib/landlord/secrets", "memory-backed"},
		{"the container's own filesystem is refused", overlayRoot + configMap, "/var/lib/landlord/secrets", "not a mounted volume"},
		{"a mount of a name that only starts like the directory does not count", overlayRoot + strings.Replace(claim, "/var/lib/landlord/secrets", "/var/lib/landlord/secrets-old", 1), "/var/lib/landlord/secrets", "not a mounted volume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDurable(tc.dir, strings.NewReader(tc.mounts))
			switch {
			case tc.wantError == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantError != "" && err == nil:
				t.Fatalf("accepted, want an error saying %q", tc.wantError)
			case tc.wantError != "" && !strings.Contains(err.Error(), tc.wantError):
				t.Fatalf("error %q does not say %q", err, tc.wantError)
			case tc.wantError != "" && !strings.Contains(err.Error(), "PersistentVolumeClaim"):
				t.Fatalf("error %q does not say what to do", err)
			}
		})
	}
}
