package main

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// jobEvent is one Job as the watch delivers it.
type jobEvent struct {
	name, servers string
	ended, gone   bool
}

func migrationJob(e jobEvent) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "t-" + e.name, Name: e.name,
		Annotations: map[string]string{indexes.DatabaseServersAnnotation: e.servers}}}
	if e.ended {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func TestJobTrackerCountsRunningJobsPerServer(t *testing.T) {
	cases := map[string]struct {
		limits   map[string]int
		events   []jobEvent
		want     map[string]serverJobs
		wantOver int
	}{
		"a Job runs from its creation to its end": {
			limits: map[string]int{"a": 2},
			events: []jobEvent{{name: "1", servers: "a"}, {name: "2", servers: "a"}, {name: "1", servers: "a", ended: true}, {name: "3", servers: "a"}},
			want:   map[string]serverJobs{"a": {Server: "a", Limit: 2, Jobs: 3, MaxRunning: 2}},
		},
		"an update of a running Job is not another Job": {
			limits: map[string]int{"a": 4},
			events: []jobEvent{{name: "1", servers: "a"}, {name: "1", servers: "a"}, {name: "1", servers: "a", ended: true}, {name: "1", servers: "a", ended: true, gone: true}},
			want:   map[string]serverJobs{"a": {Server: "a", Limit: 4, Jobs: 1, MaxRunning: 1}},
		},
		"a Job deleted while it runs frees its place": {
			limits: map[string]int{"a": 1},
			events: []jobEvent{{name: "1", servers: "a"}, {name: "1", servers: "a", gone: true}, {name: "2", servers: "a"}},
			want:   map[string]serverJobs{"a": {Server: "a", Limit: 1, Jobs: 2, MaxRunning: 1}},
		},
		"a Job on two servers counts on each": {
			limits: map[string]int{"a": 4, "b": 4},
			events: []jobEvent{{name: "1", servers: "a,b"}, {name: "2", servers: "b"}},
			want: map[string]serverJobs{
				"a": {Server: "a", Limit: 4, Jobs: 1, MaxRunning: 1},
				"b": {Server: "b", Limit: 4, Jobs: 2, MaxRunning: 2},
			},
		},
		"a server past its limit is reported": {
			limits:   map[string]int{"a": 1},
			events:   []jobEvent{{name: "1", servers: "a"}, {name: "2", servers: "a"}},
			want:     map[string]serverJobs{"a": {Server: "a", Limit: 1, Jobs: 2, MaxRunning: 2}},
			wantOver: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newJobTracker(tc.limits)
			for _, e := range tc.events {
				tr.observe(migrationJob(e), e.gone)
			}
			got := tr.figures(nil)
			if len(got) != len(tc.want) {
				t.Fatalf("figures = %+v, want %+v", got, tc.want)
			}
			for _, g := range got {
				if g != tc.want[g.Server] {
					t.Errorf("figures of %s = %+v, want %+v", g.Server, g, tc.want[g.Server])
				}
			}
			if over := tr.overLimit(); len(over) != tc.wantOver {
				t.Errorf("overLimit = %q, want %d", over, tc.wantOver)
			}
		})
	}
}
