package config

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DefaultUsageInterval is how often usage is sampled unless configured.
const DefaultUsageInterval = 15 * time.Minute

// MinUsageInterval bounds how often usage may be sampled: each sample asks every DatabaseServer
// with tenants for its database sizes, once.
const MinUsageInterval = time.Minute

// Usage configures how what each tenant uses is sampled for billing (status.usage).
type Usage struct {
	// Interval is how often usage is sampled: the counts of the tenants' ResourceQuotas (one
	// list request per 500 tenants) and, in one query per DatabaseServer, the size of every
	// database. A tenant whose usage is unchanged is not written. Default 15m, at least 1m.
	Interval metav1.Duration `json:"interval,omitempty"`
	// PodMetrics samples what the tenants' pods use (status.usage.used) from the cluster's
	// metrics API (metrics.k8s.io), in one list request of every pod per sample, where the
	// cluster serves one. false asks nothing and leaves used out. Default true.
	PodMetrics *bool `json:"podMetrics,omitempty"`
}

func (u *Usage) applyDefaults() {
	if u.Interval.Duration == 0 {
		u.Interval.Duration = DefaultUsageInterval
	}
	if u.PodMetrics == nil {
		u.PodMetrics = ptr.To(true)
	}
}

func (u Usage) validate() []error {
	if u.Interval.Duration < MinUsageInterval {
		return []error{fmt.Errorf("usage.interval: %s is shorter than %s", u.Interval.Duration, MinUsageInterval)}
	}
	return nil
}
