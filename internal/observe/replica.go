package observe

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// CollectReplica adds the read replica's series (docs/scale.md):
// ticketd_replica_lag_seconds, read from lag at each scrape (left out of a
// scrape where lag fails, rather than reported as a false zero), and
// ticketd_replica_reads_total{served_by="replica"|"primary"}, the read path's
// queries by where they ran, from served. A rising primary count with a
// rising lag is the replica falling behind and the primary answering for it.
func (m *Metrics) CollectReplica(lag func(context.Context) (float64, error), served func() (replica, primary uint64)) error {
	c := &replicaCollector{
		lag:   prometheus.NewDesc("ticketd_replica_lag_seconds", "How far the read replica's data trails the primary (0 when it has replayed all it received).", nil, nil),
		reads: prometheus.NewDesc("ticketd_replica_reads_total", "Queries of the read path (lists, search, history) by where they ran: the replica, or the primary when the replica had not caught up.", []string{"served_by"}, nil),
		lagFn: lag, served: served,
	}
	if err := m.registry.Register(c); err != nil {
		return fmt.Errorf("register replica metrics: %w", err)
	}
	return nil
}

type replicaCollector struct {
	lag, reads *prometheus.Desc
	lagFn      func(context.Context) (float64, error)
	served     func() (replica, primary uint64)
}

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.reads
}

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	replica, primary := c.served()
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(replica), "replica")
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(primary), "primary")
	ctx, cancel := context.WithTimeout(context.Background(), outboxCountTimeout)
	defer cancel()
	lag, err := c.lagFn(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.lag, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, lag)
}
