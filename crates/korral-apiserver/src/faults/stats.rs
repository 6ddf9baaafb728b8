//! What was injected: per-rule counts and their Prometheus text form.

use std::collections::BTreeMap;
use std::fmt::Write;

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

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the injection counters as Prometheus text.
pub fn render(series: &BTreeMap<SeriesKey, u64>) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP korral_apiserver_injected_faults_total Faults injected on purpose, by rule, action and code.\n",
    );
    out.push_str("# TYPE korral_apiserver_injected_faults_total counter\n");
    for ((rule, action, code), value) in series {
        let code = code.map(|c| c.to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "korral_apiserver_injected_faults_total{{rule=\"{}\",action=\"{action}\",code=\"{code}\"}} {value}",
            escape(rule)
        );
    }
    out
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
        let mut series = BTreeMap::new();
        series.insert(("a\"b".to_string(), "error", Some(429)), 2);
        series.insert(("0".to_string(), "latency", None), 4);
        let text = render(&series);
        assert!(text.contains(
            "korral_apiserver_injected_faults_total{rule=\"0\",action=\"latency\",code=\"\"} 4\n"
        ));
        assert!(text.contains(
            "korral_apiserver_injected_faults_total{rule=\"a\\\"b\",action=\"error\",code=\"429\"} 2\n"
        ));
    }
}
