package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/landlord-dev/landlord/internal/backup"
)

// runJob is `landlord job --plan FILE [--dir DIR]`: one backup or restore, or one step of it,
// as a Job's pod's container runs it, with the plan mounted from a Secret made for that Job.
// A step's plan needs --dir, the directory in the pod's scratch volume where the two steps
// meet. It returns the process's exit code.
func runJob(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("landlord job", flag.ContinueOnError)
	fs.SetOutput(stderr)
	planPath := fs.String("plan", "", "The plan (JSON) of the backup or restore, or of its step, to run.")
	dir := fs.String("dir", "", "Where a step leaves the dumps for the next, or finds them: a directory of the pod's scratch volume.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// SIGTERM is how Kubernetes stops a pod: a backup cut short removes what it wrote.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runPlan(ctx, *planPath, *dir, stdout); err != nil {
		fmt.Fprintln(stderr, "landlord job:", err)
		return 1
	}
	return 0
}

func runPlan(ctx context.Context, path, dir string, log io.Writer) error {
	if path == "" {
		return errors.New("--plan FILE is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	var plan backup.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	// A field this release does not know is a plan it would carry out only in part.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&plan); err != nil {
		// The decoder quotes field names and types, never values: the plan holds passwords.
		return fmt.Errorf("the plan %s is not valid: %w", path, err)
	}
	return backup.RunJob(ctx, plan, backup.FindTools(), dir, log)
}
