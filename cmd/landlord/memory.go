package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitEnv carries the container's memory limit, which the Deployment passes through the
// Downward API (config/manager/manager.yaml): in bytes, or as a Kubernetes quantity.
const memoryLimitEnv = "LANDLORD_MEMORY_LIMIT"

// softMemoryLimit is the Go collector's soft limit for this environment, or 0 to leave the
// runtime's: GOMEMLIMIT, when set, was already applied by the runtime and wins; without it,
// 90% of the container's limit, the rest left to what the collector does not count (goroutine
// stacks, the binary, freed memory not yet returned to the kernel). As the heap nears it the
// collector runs more often, rather than the container being killed.
func softMemoryLimit(getenv func(string) string) (int64, error) {
	raw := getenv(memoryLimitEnv)
	if getenv("GOMEMLIMIT") != "" || raw == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(raw)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a memory size: %w", memoryLimitEnv, raw, err)
	}
	limit := q.Value()
	if limit <= 0 {
		return 0, fmt.Errorf("%s: %q is not a memory size", memoryLimitEnv, raw)
	}
	return limit / 10 * 9, nil
}

// setMemoryLimit sets the collector's soft limit from the container's and says which it is.
func setMemoryLimit(log logr.Logger) error {
	limit, err := softMemoryLimit(os.Getenv)
	switch {
	case err != nil:
		return err
	case limit > 0:
		debug.SetMemoryLimit(limit)
		log.Info("soft memory limit set to 90% of the container's", "bytes", limit, "mebibytes", limit>>20)
	case os.Getenv("GOMEMLIMIT") != "":
		log.Info("soft memory limit set by GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
	default:
		log.Info("no soft memory limit: neither GOMEMLIMIT nor " + memoryLimitEnv + " is set")
	}
	return nil
}
