package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// settleReport is the operator's memory at steady state: the fleet left alone after the phases,
// with nothing to reconcile, RSS read without forcing a collection (a forced one would return
// memory the runtime keeps), then the live heap after one.
type settleReport struct {
	Seconds float64 `json:"seconds"`
	// RSSMiB are the samples, one every interval, from the phases' end.
	RSSMiB []float64 `json:"rssMiB"`
	// FinalRSSMiB is the last sample: the steady state.
	FinalRSSMiB float64 `json:"finalRSSMiB"`
	// LiveHeapMiB is the heap after a collection at the end.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
}

// settle samples the operator's RSS every interval for d, then reads its live heap.
func settle(ctx context.Context, op *operatorProcess, d, interval time.Duration) (*settleReport, error) {
	if d <= 0 {
		return nil, nil
	}
	rep := &settleReport{Seconds: d.Seconds()}
	start := time.Now()
	for {
		s, err := op.sample()
		if err != nil {
			return nil, err
		}
		rep.RSSMiB = append(rep.RSSMiB, s.rssBytes/(1<<20))
		fmt.Fprintf(os.Stderr, "  settle %4.0fs: RSS %.0f MiB\n", time.Since(start).Seconds(), s.rssBytes/(1<<20))
		left := d - time.Since(start)
		if left <= 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(interval, left)):
		}
	}
	rep.FinalRSSMiB = rep.RSSMiB[len(rep.RSSMiB)-1]
	live, err := op.post("/live-heap")
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Sscan(live, &rep.LiveHeapMiB); err != nil {
		return nil, fmt.Errorf("live heap %q: %w", live, err)
	}
	rep.LiveHeapMiB /= 1 << 20
	return rep, nil
}

// printSettle adds the steady state to the Markdown report.
func printSettle(w io.Writer, s *settleReport) {
	if s == nil {
		return
	}
	lo, hi := s.RSSMiB[0], s.RSSMiB[0]
	for _, r := range s.RSSMiB {
		lo, hi = min(lo, r), max(hi, r)
	}
	fmt.Fprintf(w, "\nSteady state: left alone for %.0f s after the phases, RSS went from %.0f MiB to %.0f MiB (between %.0f and %.0f, %d samples); live heap %.0f MiB.\n",
		s.Seconds, s.RSSMiB[0], s.FinalRSSMiB, lo, hi, len(s.RSSMiB), s.LiveHeapMiB)
}
