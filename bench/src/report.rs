//! Result rows and the printed table.

use std::fmt;

/// A goal a measured figure is compared against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// Lower is better: the figure must stay below this target.
    Below(f64),
    /// Higher is better: the figure must reach at least this target.
    AtLeast(f64),
}

impl Goal {
    /// The target value.
    pub fn target(self) -> f64 {
        match self {
            Goal::Below(t) | Goal::AtLeast(t) => t,
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Row {
    /// Stable key (for tests and JSON), e.g. `create_memory_16`.
    pub id: &'static str,
    /// What was measured, for the table.
    pub name: String,
    /// The measured figure, in `unit`.
    pub value: f64,
    /// Unit of `value` and of the target, e.g. `ms`, `/s`, `MiB`.
    pub unit: &'static str,
    /// The goal, when there is one.
    pub goal: Option<Goal>,
    /// How it was measured (printed under the table).
    pub note: String,
}

impl Row {
    /// The goal ratio: `target / measured` for lower-is-better rows, `measured / target` for
    /// higher-is-better rows, so that `>= 1.0` always means the goal is met.
    pub fn ratio(&self) -> Option<f64> {
        match self.goal? {
            Goal::Below(t) => Some(if self.value > 0.0 {
                t / self.value
            } else {
                f64::INFINITY
            }),
            Goal::AtLeast(t) => Some(self.value / t),
        }
    }

    /// Whether the goal is met (`None` when the row has no goal).
    pub fn met(&self) -> Option<bool> {
        match self.goal? {
            Goal::Below(t) => Some(self.value < t),
            Goal::AtLeast(t) => Some(self.value >= t),
        }
    }
}

/// A benchmark run: context lines, rows and notes.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// First line of the table.
    pub title: String,
    /// `(label, value)` lines printed above the table (machine, date, setup).
    pub header: Vec<(String, String)>,
    /// The measured rows, in order.
    pub rows: Vec<Row>,
    /// Extra notes printed after the per-row notes.
    pub notes: Vec<String>,
}

impl Report {
    /// The row with this id.
    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.id == id)
    }

    /// The report as JSON (for keeping results to compare runs).
    pub fn to_json(&self) -> serde_json::Value {
        let header: serde_json::Map<String, serde_json::Value> = self
            .header
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id,
                    "name": r.name,
                    "value": r.value,
                    "unit": r.unit,
                    "target": r.goal.map(Goal::target),
                    "goal": r.goal.map(|g| match g {
                        Goal::Below(_) => "below",
                        Goal::AtLeast(_) => "at_least",
                    }),
                    "ratio": r.ratio(),
                    "met": r.met(),
                    "note": r.note,
                })
            })
            .collect();
        serde_json::json!({
            "title": self.title,
            "header": header,
            "rows": rows,
            "notes": self.notes,
        })
    }
}

/// Formats a number with thousands separators and `decimals` decimals.
pub fn format_number(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let s = format!("{:.*}", decimals, value.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (s, None),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if value < 0.0 { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

fn format_value(value: f64, unit: &str) -> String {
    let decimals = match value.abs() {
        v if v >= 1000.0 => 0,
        v if v >= 100.0 => 1,
        v if v >= 1.0 => 2,
        _ => 3,
    };
    let sep = if unit.starts_with('/') { "" } else { " " };
    format!("{}{sep}{unit}", format_number(value, decimals))
}

fn format_target(goal: Option<Goal>, unit: &str) -> String {
    match goal {
        None => "-".to_string(),
        Some(Goal::Below(t)) => format!("< {}", format_value(t, unit)),
        Some(Goal::AtLeast(t)) => format!(">= {}", format_value(t, unit)),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.title)?;
        let label_width = self.header.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &self.header {
            writeln!(f, "  {k:<label_width$}  {v}")?;
        }
        writeln!(f)?;
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.name.clone(),
                    format_value(r.value, r.unit),
                    format_target(r.goal, r.unit),
                    r.ratio().map_or("-".to_string(), |x| format!("{x:.2}")),
                    match r.met() {
                        None => String::new(),
                        Some(true) => "met".to_string(),
                        Some(false) => "MISSED".to_string(),
                    },
                ]
            })
            .collect();
        let titles = ["metric", "measured", "target", "ratio", "goal"];
        let mut widths = titles.map(str::len);
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, c: [&str; 5]| -> fmt::Result {
            writeln!(
                f,
                "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {}",
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
            )
        };
        line(f, titles)?;
        let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        writeln!(f, "{}", "-".repeat(total))?;
        for row in &cells {
            line(f, [&row[0], &row[1], &row[2], &row[3], &row[4]])?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "ratio: target/measured for '<' targets, measured/target for '>=' targets; >= 1.00 means the goal is met."
        )?;
        let notes: Vec<&Row> = self.rows.iter().filter(|r| !r.note.is_empty()).collect();
        if !notes.is_empty() || !self.notes.is_empty() {
            writeln!(f, "notes:")?;
        }
        for r in notes {
            writeln!(f, "  - {}: {}", r.name, r.note)?;
        }
        for n in &self.notes {
            writeln!(f, "  - {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_goal_oriented() {
        let mut r = Row {
            id: "x",
            name: "x".into(),
            value: 25.0,
            unit: "ms",
            goal: Some(Goal::Below(50.0)),
            note: String::new(),
        };
        assert_eq!(r.ratio(), Some(2.0));
        assert_eq!(r.met(), Some(true));
        r.goal = Some(Goal::AtLeast(50.0));
        assert_eq!(r.ratio(), Some(0.5));
        assert_eq!(r.met(), Some(false));
        r.goal = None;
        assert_eq!(r.ratio(), None);
    }

    #[test]
    fn numbers() {
        assert_eq!(format_number(1234567.0, 0), "1,234,567");
        assert_eq!(format_number(999.5, 1), "999.5");
        assert_eq!(format_number(-1234.25, 2), "-1,234.25");
        assert_eq!(format_value(12345.0, "/s"), "12,345/s");
        assert_eq!(format_value(4.56789, "ms"), "4.57 ms");
    }
}
