package serve

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series. No label ever carries
// request content: the only label is the endpoint.
type metrics struct {
	ttft, itl, e2e prometheus.Histogram
	batch          prometheus.Histogram
	running        prometheus.Gauge
	waiting        prometheus.Gauge
	tokensIn       prometheus.Counter
	tokensOut      prometheus.Counter
	requests       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	lat := prometheus.ExponentialBuckets(0.001, 2, 18) // 1 ms .. 131 s
	m := &metrics{
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gelo_time_to_first_token_seconds",
			Help: "Time from a request's arrival to its first sampled token.", Buckets: lat}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gelo_inter_token_latency_seconds",
			Help: "Time between two sampled tokens of one sequence.", Buckets: lat}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gelo_e2e_request_latency_seconds",
			Help: "Time from a request's arrival to its last token.", Buckets: lat}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gelo_batch_size",
			Help: "Sequences decoded per decode step.", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gelo_requests_running",
			Help: "Sequences holding a KV slot."}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gelo_requests_waiting",
			Help: "Sequences queued for a KV slot."}),
		tokensIn: prometheus.NewCounter(prometheus.CounterOpts{Name: "gelo_prompt_tokens_total",
			Help: "Prompt tokens prefilled."}),
		tokensOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "gelo_generation_tokens_total",
			Help: "Tokens sampled."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gelo_http_requests_total",
			Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"}),
	}
	reg.MustRegister(m.ttft, m.itl, m.e2e, m.batch, m.running, m.waiting, m.tokensIn, m.tokensOut, m.requests)
	return m
}
