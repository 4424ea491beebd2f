package caddymodule

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// registeredMetrics are the module's metrics and their labels, as their
// descriptions say.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	initMetrics()
	descs := make(chan *prometheus.Desc, 64)
	for _, c := range []prometheus.Collector{metrics.requests, metrics.tasks, metrics.taskDuration,
		metrics.upstreamRequests, metrics.upstreamDuration, metrics.authFailures, metrics.pushDeliveries, metrics.stores} {
		c.Describe(descs)
	}
	close(descs)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range descs {
		s := d.String()
		var ls []string
		if m := labels.FindStringSubmatch(s); m != nil && m[1] != "" {
			ls = strings.Split(m[1], ",")
		}
		out[name.FindStringSubmatch(s)[1]] = ls
	}
	return out
}

// The Grafana dashboard queries only metrics and labels the module has,
// and shows every metric.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "examples", "grafana", "caddy-a2a.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&dash); err != nil || len(dash.Panels) == 0 {
		t.Fatalf("the dashboard does not decode (%v) or has no panels", err)
	}
	known := registeredMetrics(t)
	used := map[string]bool{}
	metricName := regexp.MustCompile(`caddy_a2a_[a-z_]+`)
	grouping := regexp.MustCompile(`by \(([^)]*)\)`)
	matcher := regexp.MustCompile(`\{([a-z_]+)[!=~]`)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			var labels []string
			for _, m := range metricName.FindAllString(q.Expr, -1) {
				name := m
				if _, ok := known[name]; !ok {
					for _, suffix := range []string{"_bucket", "_count", "_sum"} {
						name = strings.TrimSuffix(name, suffix)
					}
				}
				ls, ok := known[name]
				if !ok {
					t.Errorf("panel %q queries %s, which the module does not export", p.Title, m)
					continue
				}
				used[name] = true
				labels = append(labels, ls...)
				if strings.HasSuffix(m, "_bucket") {
					labels = append(labels, "le")
				}
			}
			var named []string
			for _, g := range grouping.FindAllStringSubmatch(q.Expr, -1) {
				for _, l := range strings.Split(g[1], ",") {
					named = append(named, strings.TrimSpace(l))
				}
			}
			for _, m := range matcher.FindAllStringSubmatch(q.Expr, -1) {
				named = append(named, m[1])
			}
			for _, l := range named {
				if !slices.Contains(labels, l) {
					t.Errorf("panel %q uses label %q, which its metrics do not have: %s", p.Title, l, q.Expr)
				}
			}
		}
	}
	for name := range known {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}
