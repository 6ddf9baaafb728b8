//! What was injected: per-rule counts and their Prometheus text form.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::plan::Rule;

/// Counts of one rule of the current configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleStats {
    /// The rule's label: its name, or its index in the configuration.
    pub rule: String,
    /// Its action: `latency`, `error`, `close_watch` or `expire_watch`.
    pub action: &'static str,
    /// The HTTP code it answers with (errors; 410 for expired watches).
    pub code: Option<u16>,
    /// Requests the rule matched (whether it fired or not).
    pub matched: u64,
    /// Faults it injected.
    pub injected: u64,
}

/// Counts of what the current configuration injected, per rule (and so per action).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// One entry per rule, in order.
    pub rules: Vec<RuleStats>,
}

impl FaultStats {
    /// The counts of the rule labelled `rule` (its name, or its index).
    pub fn rule(&self, rule: &str) -> Option<&RuleStats> {
        self.rules.iter().find(|r| r.rule == rule)
    }

    /// Faults injected by rule `rule` (0 when there is no such rule).
    pub fn injected(&self, rule: &str) -> u64 {
        self.rule(rule).map_or(0, |r| r.injected)
    }

    /// Faults injected with this action (`latency`, `error`, `close_watch`, `expire_watch`).
    pub fn by_action(&self, action: &str) -> u64 {
        self.rules
            .iter()
            .filter(|r| r.action == action)
            .map(|r| r.injected)
            .sum()
    }

    /// All faults injected.
    pub fn total(&self) -> u64 {
        self.rules.iter().map(|r| r.injected).sum()
    }
}

/// The labels of one `korral_apiserver_injected_faults_total` series.
pub type SeriesKey = (String, &'static str, Option<u16>);

/// Counter totals for `/metrics`, kept across configuration changes.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Faults injected, by rule, action and code.
    pub injected: BTreeMap<SeriesKey, u64>,
    /// Requests matched, by rule.
    pub matched: BTreeMap<String, u64>,
}

impl Totals {
    /// Adds a rule's counters.
    pub fn add(&mut self, rule: &Rule) {
        let key = (rule.label.clone(), rule.action.label(), rule.action.code());
        *self.injected.entry(key).or_default() += rule.injected.load(Ordering::Relaxed);
        *self.matched.entry(rule.label.clone()).or_default() +=
            rule.matched.load(Ordering::Relaxed);
    }

    /// Renders the counters as Prometheus text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP korral_apiserver_injected_faults_total Faults injected on purpose, by rule, action and code.\n",
        );
        out.push_str("# TYPE korral_apiserver_injected_faults_total counter\n");
        for ((rule, action, code), value) in &self.injected {
            let code = code.map(|c| c.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "korral_apiserver_injected_faults_total{{rule=\"{}\",action=\"{action}\",code=\"{code}\"}} {value}",
                escape(rule)
            );
        }
        out.push_str(
            "# HELP korral_apiserver_fault_matched_requests_total Requests a fault rule matched, whether it fired or not.\n",
        );
        out.push_str("# TYPE korral_apiserver_fault_matched_requests_total counter\n");
        for (rule, value) in &self.matched {
            let _ = writeln!(
                out,
                "korral_apiserver_fault_matched_requests_total{{rule=\"{}\"}} {value}",
                escape(rule)
            );
        }
        out
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_prometheus_text() {
        let stats = FaultStats {
            rules: vec![
                RuleStats {
                    rule: "0".into(),
                    action: "latency",
                    code: None,
                    matched: 4,
                    injected: 4,
                },
                RuleStats {
                    rule: "throttle".into(),
                    action: "error",
                    code: Some(429),
                    matched: 4,
                    injected: 2,
                },
            ],
        };
        assert_eq!(
            (stats.total(), stats.by_action("error"), stats.injected("0")),
            (6, 2, 4)
        );
        assert_eq!(stats.injected("missing"), 0);
        let mut totals = Totals::default();
        totals
            .injected
            .insert(("a\"b".to_string(), "error", Some(429)), 2);
        totals
            .injected
            .insert(("0".to_string(), "latency", None), 4);
        totals.matched.insert("0".to_string(), 9);
        let text = totals.render();
        assert!(text.contains(
            "korral_apiserver_injected_faults_total{rule=\"0\",action=\"latency\",code=\"\"} 4\n"
        ));
        assert!(text.contains(
            "korral_apiserver_injected_faults_total{rule=\"a\\\"b\",action=\"error\",code=\"429\"} 2\n"
        ));
        assert!(text.contains("korral_apiserver_fault_matched_requests_total{rule=\"0\"} 9\n"));
    }
}
