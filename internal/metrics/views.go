package metrics

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/vigilhq/vigil/api"
)

// Kinds reads the per-kind counters the registry holds in memory (probes
// by result, faults by reason, observe call latency, probe lag) for the
// API's overview, one entry per kind that has any, sorted by kind. It
// reads no store: vigil_watches is not among them.
func (m *Metrics) Kinds() []api.KindView {
	by := map[string]*api.KindView{}
	calls := map[string]*dto.Histogram{} // observe calls by kind, every outcome merged
	get := func(k string) *api.KindView {
		v := by[k]
		if v == nil {
			v = &api.KindView{Kind: k, Probes: map[string]uint64{}, Faults: map[string]uint64{}}
			by[k] = v
		}
		return v
	}
	for _, mf := range m.gather() {
		for _, x := range mf.GetMetric() {
			l := labels(x)
			switch mf.GetName() {
			case "vigil_probes_total":
				get(l["kind"]).Probes[l["result"]] += uint64(x.GetCounter().GetValue())
			case "vigil_plugin_faults_total":
				get(l["kind"]).Faults[l["reason"]] += uint64(x.GetCounter().GetValue())
			case "vigil_plugin_call_seconds":
				if l["export"] != "observe" {
					continue
				}
				get(l["kind"])
				calls[l["kind"]] = mergeHistograms(calls[l["kind"]], x.GetHistogram())
			case "vigil_probe_lag_seconds":
				get(l["kind"]).LagP99Seconds = quantile(x.GetHistogram(), 0.99)
			}
		}
	}
	for k, h := range calls {
		v := by[k]
		v.Calls = h.GetSampleCount()
		if v.Calls > 0 {
			v.CallMeanSeconds = h.GetSampleSum() / float64(v.Calls)
		}
		v.CallP99Seconds = quantile(h, 0.99)
	}
	out := make([]api.KindView, 0, len(by))
	for _, v := range by {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b api.KindView) int {
		switch {
		case a.Kind < b.Kind:
			return -1
		case a.Kind > b.Kind:
			return 1
		}
		return 0
	})
	return out
}

// LagQuantiles is the probe lag's 50th and 99th percentiles over every kind, as
// bucket upper bounds in seconds (0 before the first probe).
func (m *Metrics) LagQuantiles() (p50, p99 float64) {
	var merged *dto.Histogram
	for _, mf := range m.gather() {
		if mf.GetName() != "vigil_probe_lag_seconds" {
			continue
		}
		for _, x := range mf.GetMetric() {
			merged = mergeHistograms(merged, x.GetHistogram())
		}
	}
	return quantile(merged, 0.5), quantile(merged, 0.99)
}

// ReadyDepth is the ready queue's depth as last reported.
func (m *Metrics) ReadyDepth() int {
	for _, mf := range m.gather() {
		if mf.GetName() == "vigil_ready_queue_depth" && len(mf.GetMetric()) > 0 {
			return int(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	return 0
}

// PushesEntered counts webhook pushes entering each state since start.
func (m *Metrics) PushesEntered() map[string]uint64 {
	out := map[string]uint64{}
	for _, mf := range m.gather() {
		if mf.GetName() != "vigil_webhook_pushes_total" {
			continue
		}
		for _, x := range mf.GetMetric() {
			out[labels(x)["state"]] += uint64(x.GetCounter().GetValue())
		}
	}
	return out
}

// gather reads the in-memory instruments the views use, never the
// collectors that call out (vigil_watches reads the store).
func (m *Metrics) gather() []*dto.MetricFamily {
	mfs, _ := m.views.Gather() // the instruments are the registry's own: they cannot fail to collect
	return mfs
}

func labels(x *dto.Metric) map[string]string {
	out := make(map[string]string, len(x.GetLabel()))
	for _, lp := range x.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// quantile is the upper bound of the first bucket holding the q-th
// observation: an upper bound on the q-quantile (+Inf reads as the last
// finite bound). 0 for an empty histogram.
func quantile(h *dto.Histogram, q float64) float64 {
	if h == nil || h.GetSampleCount() == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.GetSampleCount())))
	last := 0.0
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			break
		}
		last = b.GetUpperBound()
		if b.GetCumulativeCount() >= rank {
			return last
		}
	}
	return last
}

// mergeHistograms adds b's buckets to a's (the same bounds: one vector's
// series); a nil a is a copy of b.
func mergeHistograms(a, b *dto.Histogram) *dto.Histogram {
	if b == nil {
		return a
	}
	if a == nil {
		out := &dto.Histogram{SampleCount: new(uint64), SampleSum: new(float64)}
		for _, bk := range b.GetBucket() {
			out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: new(bk.GetUpperBound()), CumulativeCount: new(uint64)})
		}
		a = out
	}
	*a.SampleCount += b.GetSampleCount()
	*a.SampleSum += b.GetSampleSum()
	for i, bk := range b.GetBucket() {
		if i < len(a.Bucket) {
			*a.Bucket[i].CumulativeCount += bk.GetCumulativeCount()
		}
	}
	return a
}
