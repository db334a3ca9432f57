package testenv

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// APIServerRequests reads apiserver_request_total from the API server's own metrics, summed by
// "VERB resource[/subresource]", watches included (an informer's initial list is a WATCH when
// the client streams it). These are the server's counts, independent of any client.
func (e *Env) APIServerRequests(ctx context.Context) (Counts, error) {
	raw, err := e.Clientset.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing API server metrics: %w", err)
	}
	out := Counts{}
	family := families["apiserver_request_total"]
	if family == nil {
		return out, nil
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["resource"] == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		out[key] += int(m.GetCounter().GetValue())
	}
	return out, nil
}
