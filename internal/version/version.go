// Package version says which build of Landlord is running: the release it was cut from and the
// commit it was built at. Releases set both with -ldflags; a build from a checkout falls back to
// what the Go toolchain recorded (the module version and the VCS revision).
package version

import (
	"runtime"
	"runtime/debug"
)

// Set at build time:
//
//	-ldflags "-X github.com/landlord-dev/landlord/internal/version.version=v0.2.0
//	          -X github.com/landlord-dev/landlord/internal/version.commit=$(git rev-parse HEAD)"
var (
	version = ""
	commit  = ""
)

// Info is one build's identity.
type Info struct {
	// Version is the release (v0.2.0), or "devel" for a build from a checkout.
	Version string `json:"version"`
	// Commit is the VCS revision, or "unknown" when the build recorded none.
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the running build's identity.
func Get() Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Commit == "" {
				info.Commit = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
