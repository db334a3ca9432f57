// Command release checks and sets the version a checkout releases, and makes the parts of a
// release that are not built by GoReleaser (hack/release.sh, make release):
//
//	go run ./hack/release check -version v0.1.0 [-digest sha256:...]   refuse a release that is not VERSION's, or a file naming another
//	go run ./hack/release set-version v0.2.0                           write VERSION and every file that names the release
//	go run ./hack/release notes -version v0.1.0 [-released]            CHANGELOG.md's section for it, on standard output
//	go run ./hack/release normalize-chart landlord-0.1.0.tgz           set the chart archive's file times to SOURCE_DATE_EPOCH
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release check|set-version|notes|normalize-chart ...")
	}
	flags := flag.NewFlagSet(args[0], flag.ContinueOnError)
	root := flags.String("root", ".", "the repository root")
	version := flags.String("version", "", "the release, vX.Y.Z")
	digest := flags.String("digest", "", "the image's digest, sha256:...")
	released := flags.Bool("released", false, "refuse a CHANGELOG section still headed Unreleased")
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "check":
		return checkRelease(*root, *version, *digest)
	case "set-version":
		if flags.NArg() != 1 {
			return errors.New("usage: release set-version vX.Y.Z")
		}
		return Set(*root, flags.Arg(0))
	case "notes":
		data, err := os.ReadFile(filepath.Join(*root, "CHANGELOG.md"))
		if err != nil {
			return err
		}
		notes, err := Notes(string(data), *version, *released)
		if err != nil {
			return err
		}
		_, err = os.Stdout.WriteString(notes)
		return err
	case "normalize-chart":
		if flags.NArg() != 1 {
			return errors.New("usage: release normalize-chart CHART.tgz")
		}
		mtime, err := sourceDate(os.Getenv("SOURCE_DATE_EPOCH"))
		if err != nil {
			return err
		}
		return NormalizeChart(flags.Arg(0), mtime)
	default:
		return fmt.Errorf("unknown command %q: check, set-version, notes or normalize-chart", args[0])
	}
}
